"""Whole-model workloads for bench/model_bench.py (issue 21): the same models in tinygrad (on its own
CPU device or on UOPD) and in PyTorch eager, from shared seeded weights."""
