; kernel red_sum_4d_2x3x4x5: 2 accesses proven in bounds, 0 checked at run time
define internal i32 @red_sum_4d_2x3x4x5_body(ptr noalias %buf0, ptr noalias %buf1, i64 %var0, i64 %var1, ptr %stop) #0 {
entry:
  %v2.addr = alloca i32
  %v5.addr = alloca i32
  %acc9 = alloca float
  %v12.addr = alloca i32
  %v15.addr = alloca i32
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
  %r.0 = mul i32 %v2, 4
  %r.1 = add i32 %r.0, %v5
  store float 0x0000000000000000, ptr %acc9
  store i32 0, ptr %v12.addr
  br label %loop12.cond
loop12.cond:
  %v12 = load i32, ptr %v12.addr
  %v12.go = icmp slt i32 %v12, 3
  br i1 %v12.go, label %loop12.body, label %loop12.exit
loop12.body:
  store i32 0, ptr %v15.addr
  br label %loop15.cond
loop15.cond:
  %v15 = load i32, ptr %v15.addr
  %v15.go = icmp slt i32 %v15, 5
  br i1 %v15.go, label %loop15.body, label %loop15.exit
loop15.body:
  %r.2 = mul i32 %v5, 5
  %r.3 = add i32 %r.2, %v15
  %r.4 = mul i32 %v12, 20
  %r.5 = add i32 %r.3, %r.4
  %r.6 = mul i32 %v2, 60
  %r.7 = add i32 %r.5, %r.6
  %p.8 = getelementptr inbounds float, ptr %buf1, i32 %r.7
  %v24 = load float, ptr %p.8
  %acc.9 = load float, ptr %acc9
  %r.10 = fadd reassoc float %acc.9, %v24
  store float %r.10, ptr %acc9
  %v15.next = add nsw i32 %v15, 1
  store i32 %v15.next, ptr %v15.addr
  br label %loop15.cond, !llvm.loop !2
loop15.exit:
  %v12.next = add nsw i32 %v12, 1
  store i32 %v12.next, ptr %v12.addr
  br label %loop12.cond, !llvm.loop !3
loop12.exit:
  %v28 = load float, ptr %acc9
  %p.11 = getelementptr inbounds float, ptr %buf0, i32 %r.1
  store float %v28, ptr %p.11
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
