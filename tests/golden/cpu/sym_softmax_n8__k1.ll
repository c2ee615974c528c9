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
  %v18 = fcmp une float %r.6, %r.6
  %v21 = fcmp olt float %r.6, 0xC062C00000000000
  %v24 = fcmp olt float %r.6, 0x4060000000000000
  %v27 = fcmp une float %r.6, 0x7FF0000000000000
  %v29 = fcmp une float %r.6, 0xFFF0000000000000
  %v30 = select i1 %v29, float %r.6, float 0x0000000000000000
  %v31 = select i1 %v18, float 0x0000000000000000, float %v30
  %v32 = select i1 %v27, float %v31, float 0x0000000000000000
  %v33 = fcmp olt float %v32, 0x0000000000000000
  %v36 = select i1 %v33, float 0xBFE0000000000000, float 0x3FE0000000000000
  %r.7 = fadd float %v32, %v36
  %v38 = call i32 @llvm.fptosi.sat.i32.f32(float %r.7)
  %cv.8 = sitofp i32 %v38 to float
  %r.9 = fsub float %v32, %cv.8
  %r.10 = fmul float 0x3F2421B200000000, %r.9
  %r.11 = fadd float %r.10, 0x3F55F14660000000
  %r.12 = fmul float %r.11, %r.9
  %r.13 = fadd float %r.12, 0x3F83B2CDC0000000
  %r.14 = fmul float %r.13, %r.9
  %r.15 = fadd float %r.14, 0x3FAC6AF380000000
  %r.16 = fmul float %r.15, %r.9
  %r.17 = fadd float %r.16, 0x3FCEBFBD80000000
  %r.18 = fmul float %r.17, %r.9
  %r.19 = fadd float %r.18, 0x3FE62E4300000000
  %r.20 = fmul float %r.19, %r.9
  %r.21 = fadd float %r.20, 0x3FF0000000000000
  %q.23 = sdiv i32 %v38, 2
  %r.24 = add i32 %q.23, 127
  %r.25 = mul i32 %r.24, 8388608
  %v65 = bitcast i32 %r.25 to float
  %r.26 = fmul float %r.21, %v65
  %r.27 = sub i32 %v38, %q.23
  %r.28 = add i32 %r.27, 127
  %r.29 = mul i32 %r.28, 8388608
  %v70 = bitcast i32 %r.29 to float
  %r.30 = fmul float %r.26, %v70
  %v72 = select i1 %v24, float %r.30, float 0x7FF0000000000000
  %v73 = select i1 %v21, float 0x0000000000000000, float %v72
  %v74 = select i1 %v18, float 0x7FF8000000000000, float %v73
  %acc.31 = load float, ptr %acc4
  %r.32 = fadd reassoc float %acc.31, %v74
  store float %r.32, ptr %acc4
  %v7.next = add nsw i32 %v7, 1
  store i32 %v7.next, ptr %v7.addr
  br label %loop7.cond, !llvm.loop !2
loop7.chunk.next:
  store i32 %v7.cend, ptr %v7.chunk.addr
  br label %loop7.chunk
loop7.exit:
  %v77 = load float, ptr %acc4
  %p.33 = getelementptr inbounds float, ptr %buf0, i32 %v2
  store float %v77, ptr %p.33
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
declare i32 @llvm.fptosi.sat.i32.f32(float)

attributes #0 = { nounwind noinline }
attributes #1 = { nounwind }

!0 = !{!"llvm.loop.mustprogress"}
!1 = !{!"branch_weights", i32 1048575, i32 1}
!2 = distinct !{!2, !0}
!3 = distinct !{!3, !0}
