"""A PEP 517 build backend that needs nothing but the standard library.

Why: ``pip install ./sdk/python`` builds in an isolated environment and
first installs the backend named in pyproject.toml from an index. With no
index reachable (air-gapped hosts, CI without network), setuptools cannot be
fetched, and the setuptools already installed cannot build a wheel without
the ``wheel`` package. This backend declares no requirements, so pip builds
the package offline with or without build isolation.

It builds a pure-Python wheel of the ``docket`` package (PEP 427), an
editable wheel (PEP 660, a .pth file pointing at this folder), and an sdist.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import tarfile
import tomllib
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "docket"
# Files of the sdist besides the package.
SDIST_EXTRA = ("pyproject.toml", "README.md", "_build/docket_build.py")
# A fixed timestamp, so that builds are reproducible.
EPOCH = (2020, 1, 1, 0, 0, 0)


def _project() -> dict[str, Any]:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]


def _dist_name() -> str:
    return _project()["name"].replace("-", "_")


def _version() -> str:
    return str(_project()["version"])


def _metadata() -> str:
    p = _project()
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {p['name']}",
        f"Version: {p['version']}",
        f"Summary: {p.get('description', '')}",
        f"Requires-Python: {p.get('requires-python', '>=3.11')}",
    ]
    lic = p.get("license")
    if isinstance(lic, dict) and "text" in lic:
        lines.append(f"License: {lic['text']}")
    for c in p.get("classifiers", []):
        lines.append(f"Classifier: {c}")
    readme = ROOT / "README.md"
    body = ""
    if readme.exists():
        lines.append("Description-Content-Type: text/markdown")
        body = readme.read_text(encoding="utf-8")
    return "\n".join(lines) + "\n\n" + body


def _package_files() -> list[Path]:
    out = []
    for path in sorted((ROOT / PACKAGE).rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            out.append(path)
    return out


def _record_hash(data: bytes) -> str:
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _write_wheel(directory: str, files: dict[str, bytes]) -> str:
    name, version = _dist_name(), _version()
    dist_info = f"{name}-{version}.dist-info"
    files = dict(files)
    files[f"{dist_info}/METADATA"] = _metadata().encode()
    files[f"{dist_info}/WHEEL"] = (
        "Wheel-Version: 1.0\nGenerator: docket_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    ).encode()
    files[f"{dist_info}/top_level.txt"] = (PACKAGE + "\n").encode()
    record_name = f"{dist_info}/RECORD"
    record = "".join(f"{path},{_record_hash(data)},{len(data)}\n" for path, data in files.items())
    record += f"{record_name},,\n"
    files[record_name] = record.encode()
    wheel_name = f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(directory, wheel_name), "w", zipfile.ZIP_DEFLATED) as zf:
        for path, data in files.items():
            info = zipfile.ZipInfo(path, date_time=EPOCH)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return wheel_name


# --- PEP 517 hooks ------------------------------------------------------------


def get_requires_for_build_wheel(config_settings: Any = None) -> list[str]:
    return []


def get_requires_for_build_sdist(config_settings: Any = None) -> list[str]:
    return []


def get_requires_for_build_editable(config_settings: Any = None) -> list[str]:
    return []


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: Any = None) -> str:
    dist_info = f"{_dist_name()}-{_version()}.dist-info"
    target = Path(metadata_directory) / dist_info
    target.mkdir(parents=True, exist_ok=True)
    (target / "METADATA").write_text(_metadata(), encoding="utf-8")
    return dist_info


def prepare_metadata_for_build_editable(metadata_directory: str, config_settings: Any = None) -> str:
    return prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def build_wheel(
    wheel_directory: str, config_settings: Any = None, metadata_directory: str | None = None
) -> str:
    files = {path.relative_to(ROOT).as_posix(): path.read_bytes() for path in _package_files()}
    return _write_wheel(wheel_directory, files)


def build_editable(
    wheel_directory: str, config_settings: Any = None, metadata_directory: str | None = None
) -> str:
    pth = f"{_dist_name()}_editable.pth"
    return _write_wheel(wheel_directory, {pth: (str(ROOT) + "\n").encode()})


def build_sdist(sdist_directory: str, config_settings: Any = None) -> str:
    base = f"{_dist_name()}-{_version()}"
    name = base + ".tar.gz"
    paths = [ROOT / p for p in SDIST_EXTRA if (ROOT / p).exists()] + _package_files()
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as tf:
        for path in paths:
            tf.add(path, arcname=f"{base}/{path.relative_to(ROOT).as_posix()}", recursive=False)
        pkg_info = _metadata().encode()
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        info.size = len(pkg_info)
        info.mode = 0o644
        tf.addfile(info, io.BytesIO(pkg_info))
    return name
