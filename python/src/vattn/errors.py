"""The one error a broken case file raises, shared by the reader (casefile) and the value rules
(validate)."""


def _printable(s):
    """Control bytes as \\xNN, as vattn prints strings from files."""
    return "".join(c if 0x20 <= ord(c) != 0x7F else f"\\x{ord(c):02x}" for c in str(s))


class CaseFileError(Exception):
    """A broken case file: names the file, the case and the field, like vattn's InputError."""

    def __init__(self, file, case, field, reason):
        self.file, self.case, self.field, self.reason = file, case, field, reason
        parts = [_printable(file) + ": "] if file else []
        if case:
            parts.append(f"case '{_printable(case)}': ")
        if field:
            parts.append(f"field '{_printable(field)}': ")
        super().__init__("".join(parts) + _printable(reason))
