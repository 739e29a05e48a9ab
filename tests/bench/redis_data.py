#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""redis_data.py - the dataset of the redis benchmark (tests/bench/run.sh).

  redis_data.py gen KEYS         RESP SET commands for KEYS keys on stdout,
                                 for `redis-cli --pipe`
  redis_data.py check SOCK KEYS  read every key back over the unix socket SOCK
                                 and compare; exit 1 on any wrong or missing
                                 value

Keys are key:%012d, 0 <= n < KEYS: the names redis-benchmark -r KEYS makes
of key:__rand_int__, so its GETs hit this dataset.  Each value is a
1000-byte JSON-ish record made from n alone: a header with ids and numbers,
then a slice of a fixed word salad (a vocabulary of place names, order words
and hex ids), text that lzo compresses to a little over half, about as well
as an application cache's; not redis-benchmark's own values.  The
benchmark's SETs (-d 1000) overwrite some keys with redis-benchmark's value,
the same for every key of a run: run.sh also stores it, with
`redis-benchmark -t set -d 1000 -n 1`, under the key "key:__rand_int__"
(no -r: the name is not substituted), and check accepts it as well.
"""
import random
import socket
import sys

VALUE_LEN = 1000
WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike "
         "november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee "
         "zulu amber basalt cobalt dune ember fjord granite harbor iris jasper kelp lagoon "
         "meadow nectar onyx prairie quartz ridge sable tundra umber valley willow zephyr "
         "order invoice customer shipped pending refunded warehouse berlin lisbon osaka "
         "toronto nairobi lima denver quito madrid").split()


def corpus():
    """1 MiB of word salad, the same on every run: values are slices of it."""
    r = random.Random(12345)
    out, size = [], 0
    while size < CORPUS_LEN + VALUE_LEN:
        w = r.choice(WORDS) if r.random() < 0.8 else f"{r.randrange(10**9):x}"
        out.append(w)
        size += len(w) + 1
    return " ".join(out).encode()


CORPUS_LEN = 1 << 20
_corpus = None


def value(n):
    global _corpus
    if _corpus is None:
        _corpus = corpus()
    head = b'{"id":%d,"user":"user%06d","score":0.%06d,"note":"' % (
        n, (n * 7919) % 10**6, (n * 104729) % 10**6)
    off = (n * 2654435761) % CORPUS_LEN
    return head + _corpus[off:off + VALUE_LEN - 2 - len(head)] + b'"}'


def gen(keys):
    out = sys.stdout.buffer
    for n in range(keys):
        k = b"key:%012d" % n
        v = value(n)
        out.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))


def read_reply(f):
    line = f.readline()
    if line[:1] == b"$":
        n = int(line[1:])
        if n < 0:
            return None
        data = f.read(n + 2)
        return data[:-2]
    raise RuntimeError(f"unexpected reply {line[:80]!r}")


def check(sock_path, keys):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock_path)
    f = s.makefile("rb")
    bad = missing = 0
    batch = 1000
    s.sendall(b"*2\r\n$3\r\nGET\r\n$16\r\nkey:__rand_int__\r\n")
    theirs = read_reply(f)
    for base in range(0, keys, batch):
        ns = range(base, min(keys, base + batch))
        s.sendall(b"".join(b"*2\r\n$3\r\nGET\r\n$16\r\nkey:%012d\r\n" % n for n in ns))
        for n in ns:
            v = read_reply(f)
            if v is None:
                missing += 1
            elif v != value(n) and v != theirs:
                bad += 1
                if bad <= 5:
                    print(f"redis_data: key:{n:012d} holds a wrong value", file=sys.stderr)
    print(f"redis_data: {keys} keys read back: {bad} wrong, {missing} missing", file=sys.stderr)
    return 1 if bad or missing else 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "gen":
        gen(int(sys.argv[2]))
        return 0
    if len(sys.argv) == 4 and sys.argv[1] == "check":
        return check(sys.argv[2], int(sys.argv[3]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
