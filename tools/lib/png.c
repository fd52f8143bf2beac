#include "png.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static void put32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int write_chunk(FILE *f, const char *type, const uint8_t *data, uint32_t len) {
    uint8_t hdr[8];
    put32(hdr, len);
    memcpy(hdr + 4, type, 4);
    uLong crc = crc32(0, (const Bytef *)type, 4);
    if (len)
        crc = crc32(crc, data, len);
    uint8_t tail[4];
    put32(tail, (uint32_t)crc);
    return fwrite(hdr, 1, 8, f) == 8 && (len == 0 || fwrite(data, 1, len, f) == len) &&
                   fwrite(tail, 1, 4, f) == 4
               ? 0
               : -1;
}

int gf_png_write(const char *path, int w, int h, const uint8_t *rgb) {
    size_t row = (size_t)w * 3 + 1, raw_len = row * (size_t)h;
    uint8_t *raw = malloc(raw_len);
    uLongf zlen = compressBound((uLong)raw_len);
    uint8_t *z = malloc(zlen);
    if (!raw || !z) {
        free(raw);
        free(z);
        return -1;
    }
    for (int y = 0; y < h; ++y) {
        raw[y * row] = 0; /* filter: none */
        memcpy(raw + y * row + 1, rgb + (size_t)y * w * 3, (size_t)w * 3);
    }
    int rc = compress2(z, &zlen, raw, (uLong)raw_len, 6) == Z_OK ? 0 : -1;
    free(raw);
    FILE *f = rc == 0 ? fopen(path, "wb") : NULL;
    if (!f) {
        free(z);
        return -1;
    }
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    uint8_t ihdr[13];
    put32(ihdr, (uint32_t)w);
    put32(ihdr + 4, (uint32_t)h);
    ihdr[8] = 8;  /* bit depth */
    ihdr[9] = 2;  /* colour type: RGB */
    ihdr[10] = 0; /* deflate */
    ihdr[11] = 0; /* adaptive filtering */
    ihdr[12] = 0; /* no interlace */
    if (fwrite(sig, 1, 8, f) != 8 || write_chunk(f, "IHDR", ihdr, 13) ||
        write_chunk(f, "IDAT", z, (uint32_t)zlen) || write_chunk(f, "IEND", NULL, 0))
        rc = -1;
    free(z);
    if (fclose(f) != 0)
        rc = -1;
    return rc;
}

static int paeth(int a, int b, int c) {
    int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
    return (pa <= pb && pa <= pc) ? a : (pb <= pc ? b : c);
}

int gf_png_read(const char *path, int *w, int *h, uint8_t **rgb, char *err, int errsize) {
    *rgb = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, (size_t)errsize, "cannot open %s", path);
        return -1;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = size > 0 ? malloc((size_t)size) : NULL;
    if (!buf || fread(buf, 1, (size_t)size, f) != (size_t)size) {
        fclose(f);
        free(buf);
        snprintf(err, (size_t)errsize, "cannot read %s", path);
        return -1;
    }
    fclose(f);
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    int channels = 0, rc = -1;
    uint8_t *idat = NULL;
    size_t idat_len = 0;
    if (size < 8 || memcmp(buf, sig, 8) != 0) {
        snprintf(err, (size_t)errsize, "%s is not a PNG file", path);
        goto done;
    }
    for (long pos = 8; pos + 12 <= size;) {
        uint32_t len = get32(buf + pos);
        const uint8_t *type = buf + pos + 4, *data = buf + pos + 8;
        if (pos + 12 + (long)len > size) {
            snprintf(err, (size_t)errsize, "%s: truncated chunk", path);
            goto done;
        }
        uLong crc = crc32(crc32(0, type, 4), data, len);
        if ((uint32_t)crc != get32(data + len)) {
            snprintf(err, (size_t)errsize, "%s: CRC mismatch in chunk %.4s", path, type);
            goto done;
        }
        if (!memcmp(type, "IHDR", 4)) {
            *w = (int)get32(data);
            *h = (int)get32(data + 4);
            if (data[8] != 8 || (data[9] != 2 && data[9] != 6) || data[12] != 0) {
                snprintf(err, (size_t)errsize, "%s: only 8-bit RGB(A) non-interlaced PNG", path);
                goto done;
            }
            channels = data[9] == 2 ? 3 : 4;
        } else if (!memcmp(type, "IDAT", 4)) {
            uint8_t *n = realloc(idat, idat_len + len);
            if (!n)
                goto done;
            idat = n;
            memcpy(idat + idat_len, data, len);
            idat_len += len;
        } else if (!memcmp(type, "IEND", 4)) {
            break;
        }
        pos += 12 + (long)len;
    }
    if (!channels || !idat || *w <= 0 || *h <= 0) {
        snprintf(err, (size_t)errsize, "%s: missing IHDR or IDAT", path);
        goto done;
    }
    size_t stride = (size_t)*w * channels, raw_len = (stride + 1) * (size_t)*h;
    uint8_t *raw = malloc(raw_len);
    uLongf got = (uLongf)raw_len;
    if (!raw || uncompress(raw, &got, idat, (uLong)idat_len) != Z_OK || got != raw_len) {
        free(raw);
        snprintf(err, (size_t)errsize, "%s: corrupt image data", path);
        goto done;
    }
    uint8_t *img = malloc(stride * (size_t)*h);
    *rgb = malloc((size_t)*w * 3 * (size_t)*h);
    if (!img || !*rgb) {
        snprintf(err, (size_t)errsize, "%s: out of memory for %d x %d pixels", path, *w, *h);
        goto bad_pixels;
    }
    for (int y = 0; y < *h; ++y) {
        int ft = raw[y * (stride + 1)];
        if (ft > 4) {
            snprintf(err, (size_t)errsize, "%s: invalid filter type %d in row %d", path, ft, y);
            goto bad_pixels;
        }
        const uint8_t *src = raw + y * (stride + 1) + 1;
        uint8_t *dst = img + y * stride, *up = y ? img + (y - 1) * stride : NULL;
        for (size_t x = 0; x < stride; ++x) {
            int a = x >= (size_t)channels ? dst[x - channels] : 0, b = up ? up[x] : 0,
                c = (up && x >= (size_t)channels) ? up[x - channels] : 0;
            int v = src[x];
            switch (ft) {
            case 1:
                v += a;
                break;
            case 2:
                v += b;
                break;
            case 3:
                v += (a + b) / 2;
                break;
            case 4:
                v += paeth(a, b, c);
                break;
            default:
                break;
            }
            dst[x] = (uint8_t)v;
        }
        for (int x = 0; x < *w; ++x)
            memcpy(*rgb + ((size_t)y * *w + x) * 3, dst + (size_t)x * channels, 3);
    }
    free(img);
    free(raw);
    rc = 0;
    goto done;
bad_pixels:
    free(img);
    free(raw);
    free(*rgb);
    *rgb = NULL;
done:
    free(idat);
    free(buf);
    return rc;
}
