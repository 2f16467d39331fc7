"""Names shared by phases that otherwise know nothing of each other."""

#: The one data file of a target that protolab creates: in a directory target, an NFS export, and
#: every lab export's volume. The engine writes to it; the lab preallocates it.
DATA_FILE = "protolab.dat"


def fio_escaped(name: str) -> str:
    """A file name as fio's filename= takes it: ':' separates files there, so a URL's are escaped ('\\:')."""
    return name.replace(":", "\\:")


def fio_unescaped(name: str) -> str:
    """fio's filename= read back as the URL or path it names, for people ('iscsi://198.18.0.1:3260/…')."""
    return name.replace("\\:", ":")


def digits(text: str) -> bool:
    """True when ``text`` is ASCII digits only: str.isdigit() also takes '²' or '٣', which int() refuses."""
    return text.isascii() and text.isdigit()
