"""A small TFRecord and tf.train.Example reader in pure Python, for the DataLoader peers of the
benchmarks: record framing (length, masked CRCs, which it does not check) and the Example protobuf's
wire format (bytes_list and int64_list features)."""
import struct


def read_records(path):
    """The payloads of the records in a TFRecord file, in order."""
    with open(path, "rb") as f:
        data = f.read()
    pos, end = 0, len(data)
    while pos < end:
        (length,) = struct.unpack_from("<Q", data, pos)
        pos += 12  # length and its masked CRC
        yield data[pos:pos + length]
        pos += length + 4  # payload and its masked CRC


def _varint(buf, pos):
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7


def _fields(buf):
    """(field number, wire type, value) of a protobuf message: ints for varints, bytes for the rest."""
    pos, end = 0, len(buf)
    while pos < end:
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 2:
            n, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        yield number, wire, value


def _signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def parse_example(payload):
    """{feature name: list of values}: bytes for bytes_list, ints for int64_list."""
    out = {}
    for number, _, features in _fields(payload):  # Example.features = 1
        if number != 1:
            continue
        for n, _, entry in _fields(features):  # Features.feature = 1 (map entries)
            if n != 1:
                continue
            name, feature = None, b""
            for k, _, v in _fields(entry):
                if k == 1:
                    name = v.decode()
                elif k == 2:
                    feature = v
            values = []
            for kind, _, lst in _fields(feature):  # bytes_list = 1, float_list = 2, int64_list = 3
                for m, wire, v in _fields(lst):
                    if kind == 1:
                        values.append(v)
                    elif kind == 3 and wire == 2:  # packed int64s
                        pos = 0
                        while pos < len(v):
                            x, pos = _varint(v, pos)
                            values.append(_signed(x))
                    elif kind == 3:
                        values.append(_signed(v))
            out[name] = values
    return out


def read_examples(path):
    for payload in read_records(path):
        yield parse_example(payload)
