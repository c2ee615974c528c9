; kernel sym_two_vars_i4_j1: 2 accesses proven in bounds, 1 checked at run time
define internal i32 @sym_two_vars_i4_j1_body(ptr noalias %buf0, ptr noalias %buf1, ptr noalias %buf2, i64 %var0, i64 %var1, i64 %var2, i64 %var3, ptr %stop) #0 {
entry:
  %v4.addr = alloca i32
  %v7.addr = alloca i32
  %v0 = trunc i64 %var0 to i32
  %v1 = trunc i64 %var1 to i32
  %r.0 = add i32 %v0, %v1
  store i32 0, ptr %v4.addr
  br label %loop4.cond
loop4.cond:
  %v4 = load i32, ptr %v4.addr
  %v4.go = icmp slt i32 %v4, %r.0
  br i1 %v4.go, label %loop4.body, label %loop4.exit
loop4.body:
  %v4.stop = load atomic i32, ptr %stop monotonic, align 4
  %v4.halt = icmp ne i32 %v4.stop, 0
  br i1 %v4.halt, label %stopped, label %loop4.on, !prof !1
loop4.on:
  store i32 0, ptr %v7.addr
  br label %loop7.cond
loop7.cond:
  %v7 = load i32, ptr %v7.addr
  %v7.go = icmp slt i32 %v7, 3
  br i1 %v7.go, label %loop7.body, label %loop7.exit
loop7.body:
  %r.1 = mul i32 %v4, 3
  %r.2 = add i32 %r.1, %v7
  %v10 = icmp slt i32 %v4, %v0
  %si.3 = select i1 %v10, i32 %r.2, i32 0
  %p.4 = getelementptr inbounds float, ptr %buf1, i32 %si.3
  %ld.5 = load float, ptr %p.4
  %v11 = select i1 %v10, float %ld.5, float 0.0
  %v13 = select i1 %v10, float %v11, float 0x0000000000000000
  %v15 = icmp ne i1 %v10, true
  %v16 = icmp slt i32 %v4, %r.0
  %r.6 = and i1 %v15, %v16
  %r.7 = mul i32 %v0, -1
  %r.8 = add i32 %r.7, %v4
  %r.9 = mul i32 %r.8, 3
  %r.10 = add i32 %r.9, %v7
  %q.12 = srem i32 %r.10, 30
  %inb.13 = icmp ult i32 %q.12, 30
  %off.14 = xor i1 %r.6, true
  %inb.15 = or i1 %off.14, %inb.13
  br i1 %inb.15, label %chk25.ok, label %chk25.fail, !prof !1
chk25.fail:
  ret i32 3
chk25.ok:
  %si.16 = select i1 %r.6, i32 %q.12, i32 0
  %p.17 = getelementptr inbounds float, ptr %buf2, i32 %si.16
  %ld.18 = load float, ptr %p.17
  %v26 = select i1 %r.6, float %ld.18, float 0.0
  %v27 = select i1 %r.6, float %v26, float 0x0000000000000000
  %r.19 = fadd float %v13, %v27
  %r.20 = fmul float %r.19, 0x4000000000000000
  %p.21 = getelementptr inbounds float, ptr %buf0, i32 %r.2
  store float %r.20, ptr %p.21
  %v7.next = add nsw i32 %v7, 1
  store i32 %v7.next, ptr %v7.addr
  br label %loop7.cond, !llvm.loop !2
loop7.exit:
  %v4.next = add nsw i32 %v4, 1
  store i32 %v4.next, ptr %v4.addr
  br label %loop4.cond, !llvm.loop !3
loop4.exit:
  ret i32 0
stopped:
  ret i32 -1
}

define i32 @sym_two_vars_i4_j1(ptr %bufs, ptr %vals, ptr %stop) #1 {
entry:
  %b0.p = getelementptr ptr, ptr %bufs, i64 0
  %b0 = load ptr, ptr %b0.p
  %b1.p = getelementptr ptr, ptr %bufs, i64 1
  %b1 = load ptr, ptr %b1.p
  %b2.p = getelementptr ptr, ptr %bufs, i64 2
  %b2 = load ptr, ptr %b2.p
  %a0.p = getelementptr i64, ptr %vals, i64 0
  %a0 = load i64, ptr %a0.p
  %a1.p = getelementptr i64, ptr %vals, i64 1
  %a1 = load i64, ptr %a1.p
  %a2.p = getelementptr i64, ptr %vals, i64 2
  %a2 = load i64, ptr %a2.p
  %a3.p = getelementptr i64, ptr %vals, i64 3
  %a3 = load i64, ptr %a3.p
  %r = call i32 @sym_two_vars_i4_j1_body(ptr %b0, ptr %b1, ptr %b2, i64 %a0, i64 %a1, i64 %a2, i64 %a3, ptr %stop)
  ret i32 %r
}

declare i32 @uopd_f64_to_f16(double)
declare i32 @uopd_f64_to_bf16(double)
declare i32 @uopd_f64_to_fp8e4m3(double)
declare i32 @uopd_f64_to_fp8e5m2(double)
declare float @uopd_f16_to_f32(i32)
declare float @uopd_bf16_to_f32(i32)
declare float @uopd_fp8e4m3_to_f32(i32)
declare float @uopd_fp8e5m2_to_f32(i32)
declare i64 @uopd_threefry(i64, i64)

attributes #0 = { nounwind noinline }
attributes #1 = { nounwind }

!0 = !{!"llvm.loop.mustprogress"}
!1 = !{!"branch_weights", i32 1048575, i32 1}
!2 = distinct !{!2, !0}
!3 = distinct !{!3, !0}
