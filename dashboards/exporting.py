"""The dashboard's download: the same YAML text as ``lwnas export`` (``tuners.export.configs``), one file or a zip."""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass

from .data import export_records

ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # fixed member times: the same trials always give the same zip bytes


@dataclass(frozen=True)
class Download:
    file_name: str
    data: bytes
    mime: str
    files: dict[str, str]  # member name -> YAML text


def export_download(url: str, study: str, numbers: list[int]) -> Download:
    """One trial: its YAML as ``lwnas export`` writes it; several: a zip of those files."""
    from tuners.export.configs import export_file_name, export_text  # imports torch (through searchspace): only here

    ot_study, records = export_records(url, study, sorted(numbers))
    files = {export_file_name(ot_study, r): export_text(ot_study, r) for r in records}
    if len(files) == 1:
        ((name, text),) = files.items()
        return Download(name, text.encode("utf-8"), "application/x-yaml", files)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, text in files.items():
            info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, text.encode("utf-8"))
    return Download(f"{study}-{len(files)}-trials.zip", buffer.getvalue(), "application/zip", files)
