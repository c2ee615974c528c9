; kernel red_sum_4d_2x3x4x5: 2 accesses proven in bounds, 0 checked at run time
define internal i32 @red_sum_4d_2x3x4x5_body(ptr noalias %buf0, ptr noalias %buf1, i64 %var0, i64 %var1, ptr %stop) #0 {
entry:
  %v2.addr = alloca i32
  %v5.addr = alloca i32
  %acc7 = alloca float
  %v10.addr = alloca i32
  %v13.addr = alloca i32
  store i32 0, ptr %v2.addr
  br label %loop2.cond
loop2.cond:
  %v2 = load i32, ptr %v2.addr
  %v2.go = icmp slt i32 %v2, 2
  br i1 %v2.go, label %loop2.body, label %loop2.exit
loop2.body:
  store i32 0, ptr %v5.addr
  br label %loop5.cond
loop5.cond:
  %v5 = load i32, ptr %v5.addr
  %v5.go = icmp slt i32 %v5, 4
  br i1 %v5.go, label %loop5.body, label %loop5.exit
loop5.body:
  store float 0x0000000000000000, ptr %acc7
  store i32 0, ptr %v10.addr
  br label %loop10.cond
loop10.cond:
  %v10 = load i32, ptr %v10.addr
  %v10.go = icmp slt i32 %v10, 3
  br i1 %v10.go, label %loop10.body, label %loop10.exit
loop10.body:
  store i32 0, ptr %v13.addr
  br label %loop13.cond
loop13.cond:
  %v13 = load i32, ptr %v13.addr
  %v13.go = icmp slt i32 %v13, 5
  br i1 %v13.go, label %loop13.body, label %loop13.exit
loop13.body:
  %r.0 = mul i32 %v5, 5
  %r.1 = add i32 %r.0, %v13
  %r.2 = mul i32 %v10, 20
  %r.3 = add i32 %r.1, %r.2
  %r.4 = mul i32 %v2, 60
  %r.5 = add i32 %r.3, %r.4
  %p.6 = getelementptr inbounds float, ptr %buf1, i32 %r.5
  %v22 = load float, ptr %p.6
  %acc.7 = load float, ptr %acc7
  %r.8 = fadd reassoc float %acc.7, %v22
  store float %r.8, ptr %acc7
  %v13.next = add nsw i32 %v13, 1
  store i32 %v13.next, ptr %v13.addr
  br label %loop13.cond, !llvm.loop !2
loop13.exit:
  %v10.next = add nsw i32 %v10, 1
  store i32 %v10.next, ptr %v10.addr
  br label %loop10.cond, !llvm.loop !3
loop10.exit:
  %v26 = load float, ptr %acc7
  %r.9 = mul i32 %v2, 4
  %r.10 = add i32 %r.9, %v5
  %p.11 = getelementptr inbounds float, ptr %buf0, i32 %r.10
  store float %v26, ptr %p.11
  %v5.next = add nsw i32 %v5, 1
  store i32 %v5.next, ptr %v5.addr
  br label %loop5.cond, !llvm.loop !4
loop5.exit:
  %v2.next = add nsw i32 %v2, 1
  store i32 %v2.next, ptr %v2.addr
  br label %loop2.cond, !llvm.loop !5
loop2.exit:
  ret i32 0
}

define i32 @red_sum_4d_2x3x4x5(ptr %bufs, ptr %vals, ptr %stop) #1 {
entry:
  %b0.p = getelementptr ptr, ptr %bufs, i64 0
  %b0 = load ptr, ptr %b0.p
  %b1.p = getelementptr ptr, ptr %bufs, i64 1
  %b1 = load ptr, ptr %b1.p
  %a0.p = getelementptr i64, ptr %vals, i64 0
  %a0 = load i64, ptr %a0.p
  %a1.p = getelementptr i64, ptr %vals, i64 1
  %a1 = load i64, ptr %a1.p
  %r = call i32 @red_sum_4d_2x3x4x5_body(ptr %b0, ptr %b1, i64 %a0, i64 %a1, ptr %stop)
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
!4 = distinct !{!4, !0}
!5 = distinct !{!5, !0}
