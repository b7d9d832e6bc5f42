from typing import Any, Callable, NamedTuple, Optional, Tuple, Union

import numpy as np
import numpy.typing as npt

from . import Backend

Progress = Union[bool, None, Callable[[int, int, str], Any]]

class EighResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any

def eigh(a: Any, UPLO: str = ..., *, out: Optional[Tuple[Any, Any]] = ...,
         backend: Backend = ..., progress: Progress = ...) -> EighResult: ...
def eigvalsh(a: Any, UPLO: str = ..., *, out: Any = ..., backend: Backend = ...,
             progress: Progress = ...) -> Any: ...
def cholesky(a: Any, upper: bool = ..., *, out: Any = ..., backend: Backend = ...,
             progress: Progress = ...) -> Any: ...
def cholesky_solve(l: Any, b: Any, *, upper: bool = ..., out: Any = ...,
                   backend: Backend = ...) -> Any: ...
def solve_triangular(a: Any, b: Any, trans: Union[int, str] = ..., lower: bool = ...,
                     unit_diagonal: bool = ..., *, out: Any = ...,
                     backend: Backend = ...) -> Any: ...
