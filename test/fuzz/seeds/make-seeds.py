#!/usr/bin/python3
"""Writes the small codec seeds for the fuzz targets (fuzz_batch and
fuzz_msgset use the record fixtures through symlinks)."""
import gzip, os, lz4.frame, snappy, zstandard
from kafka.codec import snappy_encode
here = os.path.dirname(os.path.abspath(__file__))
data = b"skiff seed " * 40 + bytes(range(256))
def put(target, name, blob):
    with open(os.path.join(here, target, name), "wb") as f:
        f.write(blob)
put("fuzz_gzip", "a.gz", gzip.compress(data))
put("fuzz_snappy", "raw", snappy.compress(data))
put("fuzz_snappy", "xerial", snappy_encode(data, xerial_compatible=True, xerial_blocksize=256))
put("fuzz_lz4", "frame", b"\x00" + lz4.frame.compress(data, block_linked=False))
put("fuzz_lz4", "legacy", b"\x01" + lz4.frame.compress(data, block_linked=False, content_checksum=True))
put("fuzz_zstd", "a.zst", zstandard.ZstdCompressor().compress(data))
