// Anchor TU for the shared precompiled header.
