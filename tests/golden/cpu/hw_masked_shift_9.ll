; kernel hw_masked_shift_9: 2 accesses proven in bounds, 0 checked at run time
define internal i32 @hw_masked_shift_9_body(ptr noalias %buf0, ptr noalias %buf1, i64 %var0, i64 %var1, ptr %stop) #0 {
entry:
  %v2.addr = alloca i32
  store i32 0, ptr %v2.addr
  br label %loop2.cond
loop2.cond:
  %v2 = load i32, ptr %v2.addr
  %v2.go = icmp slt i32 %v2, 9
  br i1 %v2.go, label %loop2.body, label %loop2.exit
loop2.body:
  %v4 = icmp slt i32 %v2, 2
  %v6 = icmp ne i1 %v4, true
  %r.0 = add i32 %v2, -2
  br i1 %v6, label %ml.1.do, label %ml.1.skip
ml.1.do:
  %p.2 = getelementptr inbounds float, ptr %buf1, i32 %r.0
  %ld.3 = load float, ptr %p.2
  br label %ml.1.join
ml.1.skip:
  br label %ml.1.join
ml.1.join:
  %v9 = phi float [ %ld.3, %ml.1.do ], [ 0.0, %ml.1.skip ]
  %v11 = select i1 %v6, float %v9, float 0xBFF0000000000000
  %p.4 = getelementptr inbounds float, ptr %buf0, i32 %v2
  store float %v11, ptr %p.4
  %v2.next = add nsw i32 %v2, 1
  store i32 %v2.next, ptr %v2.addr
  br label %loop2.cond, !llvm.loop !2
loop2.exit:
  ret i32 0
}

define i32 @hw_masked_shift_9(ptr %bufs, ptr %vals, ptr %stop) #1 {
entry:
  %b0.p = getelementptr ptr, ptr %bufs, i64 0
  %b0 = load ptr, ptr %b0.p
  %b1.p = getelementptr ptr, ptr %bufs, i64 1
  %b1 = load ptr, ptr %b1.p
  %a0.p = getelementptr i64, ptr %vals, i64 0
  %a0 = load i64, ptr %a0.p
  %a1.p = getelementptr i64, ptr %vals, i64 1
  %a1 = load i64, ptr %a1.p
  %r = call i32 @hw_masked_shift_9_body(ptr %b0, ptr %b1, i64 %a0, i64 %a1, ptr %stop)
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
