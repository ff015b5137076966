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
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

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


_U32 = pa.uint32()
_VECTORISED_FROM = 64   # keys; below this the loop of `add` is as quick


def _u32(value: int) -> pa.Scalar:
    return pa.scalar(value, _U32)


def _group_positions(keys: Sequence[bytes], length: int, nb_hash: int, vector_size: int) -> list[pa.Array]:
    """`murmur_hash` chained `nb_hash` times (`HashFunction.hash`) over keys of one byte length, as
    Arrow arrays of bit positions (one per hash), with Arrow's wrapping 32-bit arithmetic."""
    n = len(keys)
    flat = pa.Array.from_buffers(pa.uint8(), n * length, [None, pa.py_buffer(b"".join(keys))])

    def column(c: int) -> pa.Array:
        return pc.take(flat, pa.array(range(c, n * length, length), pa.int64()))

    m = _u32(_M)
    quads = length >> 2
    mixed = []
    for q in range(quads):
        word = pc.cast(column(4 * q), _U32)
        for j in (1, 2, 3):
            word = pc.bit_wise_or(word, pc.shift_left(pc.cast(column(4 * q + j), _U32), _u32(8 * j)))
        k = pc.multiply(word, m)
        k = pc.bit_wise_xor(k, pc.shift_right(k, _u32(24)))
        mixed.append(pc.multiply(k, m))
    tail = []
    for back, shift in ((3, 16), (2, 8), (1, 0)):
        if length - (quads << 2) >= back:  # (int) data[length - back] << shift: a signed byte
            signed = pc.cast(column(length - back).view(pa.int8()), pa.int32())
            tail.append(pc.shift_left(signed, pa.scalar(shift, pa.int32())).view(_U32))
    seed = pa.repeat(_u32(0), n)
    out = []
    for _ in range(nb_hash):
        h = pc.bit_wise_xor(seed, _u32(length))
        for k in mixed:
            h = pc.bit_wise_xor(pc.multiply(h, m), k)
        if tail:
            for value in tail:
                h = pc.bit_wise_xor(h, value)
            h = pc.multiply(h, m)
        h = pc.bit_wise_xor(h, pc.shift_right(h, _u32(13)))
        h = pc.multiply(h, m)
        h = pc.bit_wise_xor(h, pc.shift_right(h, _u32(15)))
        seed = h
        magnitude = pc.abs(pc.cast(h.view(pa.int32()), pa.int64()))  # Math.abs(initval % maxValue)
        out.append(pc.subtract(magnitude, pc.multiply(pc.divide(magnitude, vector_size), vector_size)))
    return out


def bloom_filter(keys: Sequence[str], *, entries: int = NUM_ENTRIES, fpp: float = FPP,
                 max_entries: int = MAX_ENTRIES, vectorise_from: int = _VECTORISED_FROM) -> DynamicBloomFilter:
    """A DYNAMIC_V0 filter holding `keys` added in order: `DynamicBloomFilter.add` for each, the
    hashing vectorised with Arrow from `vectorise_from` keys on."""
    bloom = DynamicBloomFilter(entries, fpp, max_entries)
    if len(keys) < vectorise_from:
        for key in keys:
            bloom.add(key)
        return bloom
    encoded = [k.encode("utf-8") for k in keys]
    by_length: dict[int, list[int]] = {}
    for i, data in enumerate(encoded):
        by_length.setdefault(len(data), []).append(i)
    groups = [(pa.array(rows, pa.int64()),
               _group_positions([encoded[i] for i in rows], length, bloom.nb_hash, bloom.vector_size))
              for length, rows in by_length.items()]
    start = 0
    while start < len(keys):  # the keys' rows, as `add` fills them (getActiveStandardBF)
        if bloom._active() is None:
            bloom.rows.append(_Row(bloom.vector_size))
            bloom.current = 0
        room = len(keys) - start if bloom.reached_max else min(len(keys) - start, max(1, bloom.nr - bloom.current))
        end = start + room
        found = []
        for index, positions in groups:
            inside = pc.and_(pc.greater_equal(index, start), pc.less(index, end))
            found += [pc.filter(p, inside) for p in positions]
        bits = bloom.rows[-1].bits
        positions = pc.unique(pa.concat_arrays(found))  # distinct bits: their masks summed per byte are OR-ed
        masks = pa.table({"byte": pc.shift_right(positions, 3),
                          "mask": pc.shift_left(pa.scalar(1, pa.int64()), pc.bit_wise_and(positions, 7))})
        summed = masks.group_by("byte").aggregate([("mask", "sum")])
        for byte, mask in zip(summed.column("byte").to_pylist(), summed.column("mask_sum").to_pylist(), strict=True):
            bits[byte] |= mask
        bloom.current += room
        start = end
    return bloom


def key_footer(keys: Sequence[str]) -> dict[str, str]:
    """The footer entries `HoodieBloomFilterWriteSupport.finalizeMetadata` adds for the record keys
    written (each key once per record): the bloom filter, its type code and, when a key was
    written, the min and max record keys (Java's String order: UTF-16 code units)."""
    footer = {BLOOM_FOOTER_KEY: bloom_filter(keys).to_footer(), BLOOM_TYPE_KEY: DYNAMIC_V0}
    if keys:
        if all(k.isascii() for k in keys):
            low, high = min(keys), max(keys)
        else:
            low, high = min(keys, key=_utf16), max(keys, key=_utf16)
        footer |= {MIN_KEY_FOOTER: low, MAX_KEY_FOOTER: high}
    return footer


def _utf16(key: str) -> bytes:
    return key.encode("utf-16-be")


__all__ = ["BLOOM_FOOTER_KEY", "BLOOM_TYPE_KEY", "DYNAMIC_V0", "MAX_KEY_FOOTER", "MIN_KEY_FOOTER",
           "DynamicBloomFilter", "bloom_filter", "key_footer", "murmur_hash"]
