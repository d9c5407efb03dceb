"""The SDK's version, sent to the server as ``sdk`` ("python/<version>")."""

__version__ = "0.1.0"
SDK = "python/" + __version__
