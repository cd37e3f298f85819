"""Checks that a PNG screenshot is a real picture: the file exists, is larger than 10 KB, and
its pixels are not all one colour. Decodes the PNG with the standard library only (zlib and the
five scanline filters), 8-bit RGB or RGBA as Chromium writes them.

Usage: python3 scripts/check_png.py FILE.png
"""
import struct
import sys
import zlib


def decode(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace:
        raise ValueError(f"unsupported PNG (depth {depth}, colour type {colour})")
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def main(path):
    import os

    size = os.path.getsize(path)
    if size < 10_000:
        sys.exit(f"{path}: only {size} bytes")
    width, height, bpp, rows = decode(path)
    colours = set()
    for row in rows[::4]:
        for x in range(0, width * bpp, bpp * 4):
            colours.add(row[x : x + 3])
    if len(colours) < 2:
        sys.exit(f"{path}: a single colour")
    print(f"{path}: {width}x{height}, {size} bytes, {len(colours)} colours sampled: ok")


if __name__ == "__main__":
    main(sys.argv[1])
