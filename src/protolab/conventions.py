"""Names shared by phases that otherwise know nothing of each other."""

#: The one data file of a target that protolab creates: in a directory target, an NFS export, and
#: every lab export's volume. The engine writes to it; the lab preallocates it.
DATA_FILE = "protolab.dat"
