"""All I/O on the lake goes through one `Storage` interface, chosen by URI scheme. The names
this package exports are listed in `__init__.pyi` and load their modules on first use."""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
