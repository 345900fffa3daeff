"""A small reader of pprof's protobuf (profile.proto), enough to check a
profile the way Grafana Pyroscope's ingester does before it takes it
(pkg/validation/validate.go ValidateProfile), without Go."""

import gzip


def _varint(buf, i):
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def fields(buf):
    """[(field number, wire type, value)]: ints for varints, bytes for the rest."""
    out, i = [], 0
    while i < len(buf):
        key, i = _varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(buf, i)
        elif wt == 2:
            n, i = _varint(buf, i)
            v = bytes(buf[i:i + n])
            if len(v) != n:
                raise ValueError("truncated field %d" % num)
            i += n
        elif wt == 1:
            v, i = int.from_bytes(buf[i:i + 8], "little"), i + 8
        elif wt == 5:
            v, i = int.from_bytes(buf[i:i + 4], "little"), i + 4
        else:
            raise ValueError("wire type %d" % wt)
        out.append((num, wt, v))
    return out


def _ints(wt, v):
    """A repeated integer field, packed (bytes) or not (one int)."""
    if wt == 0:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = _varint(v, i)
        out.append(x)
    return out


class Profile(object):
    """The parts of a pprof Profile the tests look at; strings resolved."""

    def __init__(self, data):
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        self.size = len(data)
        self.strings, self.sample_types, self.samples = [], [], []
        self.locations, self.functions = {}, {}
        self.mappings = {}          # id -> {"start", "limit", "offset", "file", "build_id"}
        self.addresses = {}         # location id -> (mapping id, address), when it has one
        self.time_nanos = self.duration_nanos = self.period = 0
        self.period_type = None
        raw_types, raw_samples, raw_locs, raw_funcs, raw_period_type = [], [], [], [], None
        raw_maps = []
        for num, wt, v in fields(data):
            if num == 1:
                raw_types.append(dict((n, x) for n, _, x in fields(v)))
            elif num == 2:
                raw_samples.append(v)
            elif num == 3:
                raw_maps.append(dict((n, x) for n, _, x in fields(v)))
            elif num == 4:
                raw_locs.append(v)
            elif num == 5:
                raw_funcs.append(dict((n, x) for n, _, x in fields(v)))
            elif num == 6:
                self.strings.append(v.decode("utf-8"))   # invalid UTF-8 raises
            elif num == 9:
                self.time_nanos = _signed(v)
            elif num == 10:
                self.duration_nanos = _signed(v)
            elif num == 11:
                raw_period_type = dict((n, x) for n, _, x in fields(v))
            elif num == 12:
                self.period = _signed(v)
        s = self.strings
        self.sample_types = [(s[t.get(1, 0)], s[t.get(2, 0)]) for t in raw_types]
        if raw_period_type is not None:
            self.period_type = (s[raw_period_type.get(1, 0)], s[raw_period_type.get(2, 0)])
        for f in raw_funcs:
            self.functions[f.get(1, 0)] = (s[f.get(2, 0)], s[f.get(4, 0)])
        for m in raw_maps:
            self.mappings[m.get(1, 0)] = {"start": m.get(2, 0), "limit": m.get(3, 0),
                                          "offset": m.get(4, 0), "file": s[m.get(5, 0)],
                                          "build_id": s[m.get(6, 0)]}
        for raw in raw_locs:
            loc_id, lines, mapping, address = 0, [], 0, 0
            for n, wt, v in fields(raw):
                if n == 1:
                    loc_id = v
                elif n == 2:
                    mapping = v
                elif n == 3:
                    address = v
                elif n == 4:
                    line = dict((k, x) for k, _, x in fields(v))
                    lines.append((line.get(1, 0), _signed(line.get(2, 0))))
            self.locations[loc_id] = lines
            if mapping:
                self.addresses[loc_id] = (mapping, address)
        for raw in raw_samples:
            locs, values, labels = [], [], []
            for n, wt, v in fields(raw):
                if n == 1:
                    locs += _ints(wt, v)
                elif n == 2:
                    values += [_signed(x) for x in _ints(wt, v)]
                elif n == 3:
                    lab = dict((k, x) for k, _, x in fields(v))
                    labels.append((s[lab.get(1, 0)], s[lab[2]] if lab.get(2) else None,
                                   _signed(lab.get(3, 0))))
            self.samples.append((locs, values, labels))

    def problem(self, now_ns, max_samples=16000, max_size=4 << 20,
                older=3600 * 10**9, newer=600 * 10**9):
        """What Pyroscope's ValidateProfile (default limits) would refuse, or None."""
        if not self.sample_types:
            return "empty profile (no sample types)"
        if not self.strings or self.strings[0] != "":
            return "string 0 should be empty string"
        if self.time_nanos > 0 and not now_ns - older < self.time_nanos < now_ns + newer:
            return "profile time %d outside the ingestion window" % self.time_nanos
        if self.size > max_size:
            return "profile of %d bytes > %d" % (self.size, max_size)
        if len(self.samples) > max_samples:
            return "%d samples > %d" % (len(self.samples), max_samples)
        if 0 in self.locations or 0 in self.functions:
            return "location or function id is 0"
        for locs, values, labels in self.samples:
            if len(values) != len(self.sample_types):
                return "sample value length mismatch"
        for t, _ in self.sample_types:
            if "-" in t:
                return "sample type contains -"
        return None

    def function_names(self):
        return {name for name, _ in self.functions.values()}

    def sample_functions(self, sample):
        """Function names of a sample's stack, leaf first."""
        out = []
        for loc in sample[0]:
            for fid, _ in self.locations.get(loc, []):
                out.append(self.functions.get(fid, ("?", "?"))[0])
        return out

    def string_labels(self, sample):
        return {k: v for k, v, _ in sample[2] if v is not None}

    def all_labels(self, sample):
        """{key: value} with numeric labels as strings of their number."""
        return {k: (v if v is not None else str(n)) for k, v, n in sample[2]}

    def total(self, index=0):
        return sum(v[index] for _, v, _ in self.samples)
