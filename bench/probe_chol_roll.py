#!/usr/bin/env python3
"""Probe (issue 30): the 64-lane register Cholesky rolled (GSTAT_CUDA_CHOL_ROLL=1,
4, 8) must give bitwise the unrolled kernel's factors. Prints one digest per
case (batch 1024 at n 33-64, float32 and float64, a not positive definite
element among them); run it once per setting and compare the lines."""
import hashlib

import numpy as np
import torch

import gstat
import gstat.linalg as gl

for dt in (torch.float32, torch.float64):
    for n in (33, 40, 48, 57, 64):
        g = torch.Generator().manual_seed(n)
        X = torch.randn(1024, n, n + 8, generator=g, dtype=torch.float64)
        A = (X @ X.transpose(1, 2) / n).to(dt)
        L = gl.cholesky(A.cuda(), backend="cuda")
        torch.cuda.synchronize()
        h = hashlib.sha1(L.cpu().numpy().tobytes()).hexdigest()[:16]
        A[5] = -A[5]  # fails at its first pivot
        A[9, n // 2, n // 2] = -1e3  # fails midway
        out, msg = torch.empty_like(A).cuda(), "no error"
        try:
            gl.cholesky(A.cuda(), out=out, backend="cuda")
        except gstat.LinAlgError as e:
            msg = str(e)[:60]
        torch.cuda.synchronize()
        nan = torch.isnan(out[5]).all().item() and torch.isnan(out[9]).all().item()
        same = torch.equal(out[:5].cpu(), L[:5].cpu())
        print(f"chol {str(dt)[6:]} n {n}: {h} failed NaN {nan}, rest same {same}: {msg}")
