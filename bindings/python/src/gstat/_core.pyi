from typing import Any

c_version: str
LinAlgError: type
UnsupportedError: type
BackendError: type
EighResult: type

def __getattr__(name: str) -> Any: ...
