; kernel sym_softmax_n8__k1: 3 accesses proven in bounds, 0 checked at run time
define internal i32 @sym_softmax_n8__k1_body(ptr noalias %buf0, ptr noalias %buf1, ptr noalias %buf2, i64 %var0, i64 %var1, i64 %var2, ptr %stop) #0 {
entry:
  %v2.addr = alloca i32
  %acc4 = alloca float
  %v7.addr = alloca i32
  %v7.chunk.addr = alloca i32
  store i32 0, ptr %v2.addr
  br label %loop2.cond
loop2.cond:
  %v2 = load i32, ptr %v2.addr
  %v2.go = icmp slt i32 %v2, 4
  br i1 %v2.go, label %loop2.body, label %loop2.exit
loop2.body:
  %v2.stop = load atomic i32, ptr %stop monotonic, align 4
  %v2.halt = icmp ne i32 %v2.stop, 0
  br i1 %v2.halt, label %stopped, label %loop2.on, !prof !1
loop2.on:
  store float 0x0000000000000000, ptr %acc4
  %v5 = trunc i64 %var0 to i32
  store i32 0, ptr %v7.chunk.addr
  br label %loop7.chunk
loop7.chunk:
  %v7.c = load i32, ptr %v7.chunk.addr
  %v7.more = icmp slt i32 %v7.c, %v5
  br i1 %v7.more, label %loop7.check, label %loop7.exit
loop7.check:
  %v7.stop = load atomic i32, ptr %stop monotonic, align 4
  %v7.halt = icmp ne i32 %v7.stop, 0
  br i1 %v7.halt, label %stopped, label %loop7.on, !prof !1
loop7.on:
  %v7.left = sub nsw i32 %v5, %v7.c
  %v7.full = icmp sgt i32 %v7.left, 65536
  %v7.step = select i1 %v7.full, i32 65536, i32 %v7.left
  %v7.cend = add nsw i32 %v7.c, %v7.step
  store i32 %v7.c, ptr %v7.addr
  br label %loop7.cond
loop7.cond:
  %v7 = load i32, ptr %v7.addr
  %v7.go = icmp slt i32 %v7, %v7.cend
  br i1 %v7.go, label %loop7.body, label %loop7.chunk.next
loop7.body:
  %r.0 = mul i32 %v2, 16
  %r.1 = add i32 %r.0, %v7
  %p.2 = getelementptr inbounds float, ptr %buf1, i32 %r.1
  %v11 = load float, ptr %p.2
  %p.3 = getelementptr inbounds float, ptr %buf2, i32 %v2
  %v12 = load float, ptr %p.3
  %r.4 = fmul float %v12, 0xBFF0000000000000
  %r.5 = fadd float %v11, %r.4
  %r.6 = fmul float %r.5, 0x3FF7154760000000
  %u.7 = call float @llvm.exp2.f32(float %r.6)
  %acc.8 = load float, ptr %acc4
  %r.9 = fadd reassoc float %acc.8, %u.7
  store float %r.9, ptr %acc4
  %v7.next = add nsw i32 %v7, 1
  store i32 %v7.next, ptr %v7.addr
  br label %loop7.cond, !llvm.loop !2
loop7.chunk.next:
  store i32 %v7.cend, ptr %v7.chunk.addr
  br label %loop7.chunk
loop7.exit:
  %v21 = load float, ptr %acc4
  %p.10 = getelementptr inbounds float, ptr %buf0, i32 %v2
  store float %v21, ptr %p.10
  %v2.next = add nsw i32 %v2, 1
  store i32 %v2.next, ptr %v2.addr
  br label %loop2.cond, !llvm.loop !3
loop2.exit:
  ret i32 0
stopped:
  ret i32 -1
}

define i32 @sym_softmax_n8__k1(ptr %bufs, ptr %vals, ptr %stop) #1 {
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
  %r = call i32 @sym_softmax_n8__k1_body(ptr %b0, ptr %b1, ptr %b2, i64 %a0, i64 %a1, i64 %a2, ptr %stop)
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
declare float @llvm.exp2.f32(float)

attributes #0 = { nounwind noinline }
attributes #1 = { nounwind }

!0 = !{!"llvm.loop.mustprogress"}
!1 = !{!"branch_weights", i32 1048575, i32 1}
!2 = distinct !{!2, !0}
!3 = distinct !{!3, !0}
