"""The record-key bloom filter Hudi writes into every base file's Parquet footer
(`HoodieBloomFilterWriteSupport.finalizeMetadata`: `org.apache.hudi.bloomfilter`, the filter
serialized and Base64-encoded, `hoodie_bloom_filter_type_code`, and the min/max record keys).

Hudi's default filter (`hoodie.bloom.index.filter.type=DYNAMIC_V0`,
`BloomFilterFactory.createBloomFilter`) is a `HoodieDynamicBoundedBloomFilter` over
`InternalDynamicBloomFilter` (Hadoop's DynamicBloomFilter): rows of standard filters of
`hoodie.index.bloom.num_entries` (60,000) keys each, up to
`hoodie.bloom.index.filter.dynamic.max.entries` (100,000), each row sized by
`BloomFilterUtils.getBitSize` / `getNumHashes` for `hoodie.index.bloom.fpp` (1e-9), hashed with
Hadoop's MurmurHash (hash type 1) as `HashFunction.hash` chains it. Serialized as Java's
`DataOutputStream` writes `InternalDynamicBloomFilter.write`."""

from __future__ import annotations

import base64
import math
import struct
from collections.abc import Iterable

BLOOM_FOOTER_KEY = "org.apache.hudi.bloomfilter"    # HoodieAvroWriteSupport.HOODIE_AVRO_BLOOM_FILTER_METADATA_KEY
BLOOM_TYPE_KEY = "hoodie_bloom_filter_type_code"     # HoodieBloomFilterWriteSupport.HOODIE_BLOOM_FILTER_TYPE_CODE
MIN_KEY_FOOTER = "hoodie_min_record_key"
MAX_KEY_FOOTER = "hoodie_max_record_key"
DYNAMIC_V0 = "DYNAMIC_V0"
NUM_ENTRIES = 60_000          # HoodieIndexConfig.BLOOM_FILTER_NUM_ENTRIES_VALUE
FPP = 0.000000001             # HoodieIndexConfig.BLOOM_FILTER_FPP_VALUE
MAX_ENTRIES = 100_000         # HoodieIndexConfig.BLOOM_INDEX_FILTER_DYNAMIC_MAX_ENTRIES
_VERSION = -1                 # org.apache.hadoop.util.bloom.Filter.VERSION
_MURMUR_HASH = 1              # Hash.MURMUR_HASH
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def _int32(value: int) -> int:
    value &= _MASK
    return value - (1 << 32) if value & 0x80000000 else value


def murmur_hash(data: bytes, seed: int) -> int:
    """Hadoop's `MurmurHash.hash(byte[], int length, int seed)` (MurmurHash2, 32 bits), with its
    sign-extended tail bytes, as a signed Java int."""
    length = len(data)
    h = (seed ^ length) & _MASK
    quads = length >> 2
    for i in range(quads):
        k = int.from_bytes(data[i * 4:i * 4 + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = (h * _M) & _MASK
        h ^= k
    left = length - (quads << 2)
    if left:
        def signed(b: int) -> int:
            return b - 256 if b > 127 else b
        if left >= 3:
            h ^= (signed(data[length - 3]) << 16) & _MASK
        if left >= 2:
            h ^= (signed(data[length - 2]) << 8) & _MASK
        h ^= signed(data[length - 1]) & _MASK
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return _int32(h)


def bit_size(entries: int, fpp: float) -> int:
    """`BloomFilterUtils.getBitSize`."""
    return math.ceil(entries * (-math.log(fpp) / (math.log(2) ** 2)))


def num_hashes(bits: int, entries: int) -> int:
    """`BloomFilterUtils.getNumHashes`."""
    return math.ceil(math.log(2) * bits / entries)


class _Row:
    """Hadoop's `BloomFilter` (Hudi's `InternalBloomFilter`): a bit vector."""

    def __init__(self, vector_size: int) -> None:
        self.bits = bytearray((vector_size + 7) // 8)


class DynamicBloomFilter:
    """`HoodieDynamicBoundedBloomFilter` (type DYNAMIC_V0) with Hudi's defaults."""

    def __init__(self, entries: int = NUM_ENTRIES, fpp: float = FPP, max_entries: int = MAX_ENTRIES) -> None:
        self.vector_size = bit_size(entries, fpp)
        self.nb_hash = num_hashes(self.vector_size, entries)
        self.nr = entries
        self.max_nr = max_entries
        self.current = 0
        self.reached_max = False
        self.rows = [_Row(self.vector_size)]

    def _active(self) -> _Row | None:
        """`InternalDynamicBloomFilter.getActiveStandardBF`."""
        if self.reached_max:
            return self.rows[-1]
        if self.current >= self.nr and len(self.rows) * self.nr < self.max_nr:
            return None
        if self.current >= self.nr and len(self.rows) * self.nr >= self.max_nr:
            self.reached_max = True
        return self.rows[-1]

    def add(self, key: str) -> None:
        """`InternalDynamicBloomFilter.add` of `new Key(key.getBytes(UTF_8))`."""
        row = self._active()
        if row is None:
            row = _Row(self.vector_size)
            self.rows.append(row)
            self.current = 0
        data = key.encode("utf-8")
        seed = 0
        for _ in range(self.nb_hash):  # HashFunction.hash: each hash seeds the next
            seed = murmur_hash(data, seed)
            position = abs(seed) % self.vector_size  # Math.abs(initval % maxValue)
            row.bits[position >> 3] |= 1 << (position & 7)
        self.current += 1

    def serialize(self) -> bytes:
        """`InternalDynamicBloomFilter.write`: the filter's header, `nr`, the records in the
        active row, the row count, then each row (its header and bit bytes)."""
        header = struct.pack(">iiBi", _VERSION, self.nb_hash, _MURMUR_HASH, self.vector_size)
        parts = [header, struct.pack(">iii", self.nr, self.current, len(self.rows))]
        for row in self.rows:
            parts += [header, bytes(row.bits)]
        return b"".join(parts)

    def to_footer(self) -> str:
        """`HoodieDynamicBoundedBloomFilter.serializeToString`: Base64 of `serialize`."""
        return base64.b64encode(self.serialize()).decode("ascii")


def key_footer(keys: Iterable[str]) -> dict[str, str]:
    """The footer entries `HoodieBloomFilterWriteSupport.finalizeMetadata` adds for the record keys
    written (each key once per record): the bloom filter, its type code and, when a key was
    written, the min and max record keys (Java's String order: UTF-16 code units)."""
    bloom = DynamicBloomFilter()
    low: str | None = None
    high: str | None = None
    for key in keys:
        bloom.add(key)
        order = key.encode("utf-16-be")
        if low is None or order < low.encode("utf-16-be"):
            low = key
        if high is None or order > high.encode("utf-16-be"):
            high = key
    footer = {BLOOM_FOOTER_KEY: bloom.to_footer(), BLOOM_TYPE_KEY: DYNAMIC_V0}
    if low is not None and high is not None:
        footer |= {MIN_KEY_FOOTER: low, MAX_KEY_FOOTER: high}
    return footer


__all__ = ["BLOOM_FOOTER_KEY", "BLOOM_TYPE_KEY", "DYNAMIC_V0", "MAX_KEY_FOOTER", "MIN_KEY_FOOTER",
           "DynamicBloomFilter", "key_footer", "murmur_hash"]
