/*
 * format.c - the printf of Windows kernel code, for DbgPrint and the ntstrsafe Printf forms.
 * glibc's printf does not know the Windows conversions and sizes (%ws, %S, %wZ, %Z, %C, %I64d,
 * %Iu) and reads %ld as a 64-bit long, where LLP64 code passes a 32-bit LONG; so the kit parses
 * every conversion itself, fetches each argument with its Windows width and lets snprintf
 * format only single, standard conversions. Output is UTF-8 or UTF-16; a result that does not
 * fit is truncated and terminated, and the full length is returned.
 */
#include <stdio.h>
#include "wdk_internal.h"

struct sink {
    void *buf;
    size_t cap;     /* units (bytes or WCHARs) including the terminator */
    int wide;
    size_t len;     /* units the full result needs */
};

static void put_unit(struct sink *s, uint32_t u)
{
    if (s->len + 1 < s->cap) {
        if (s->wide)
            ((WCHAR *)s->buf)[s->len] = (WCHAR)u;
        else
            ((char *)s->buf)[s->len] = (char)u;
    }
    s->len++;
}

static void put_cp(struct sink *s, uint32_t cp)
{
    if (s->wide) {
        if (cp >= 0x10000) {
            cp -= 0x10000;
            put_unit(s, 0xD800 + (cp >> 10));
            put_unit(s, 0xDC00 + (cp & 0x3FF));
        } else {
            put_unit(s, cp);
        }
        return;
    }
    if (cp < 0x80) {
        put_unit(s, cp);
    } else if (cp < 0x800) {
        put_unit(s, 0xC0 | (cp >> 6));
        put_unit(s, 0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        put_unit(s, 0xE0 | (cp >> 12));
        put_unit(s, 0x80 | ((cp >> 6) & 0x3F));
        put_unit(s, 0x80 | (cp & 0x3F));
    } else {
        put_unit(s, 0xF0 | (cp >> 18));
        put_unit(s, 0x80 | ((cp >> 12) & 0x3F));
        put_unit(s, 0x80 | ((cp >> 6) & 0x3F));
        put_unit(s, 0x80 | (cp & 0x3F));
    }
}

/* A text source: narrow (UTF-8, invalid bytes taken as Latin-1) or wide (UTF-16). */
struct src {
    const void *p;
    int wide;
    size_t i, n;    /* position and length in units (n = SIZE_MAX: NUL-terminated) */
};

static int src_next(struct src *r, uint32_t *cp)
{
    if (r->i >= r->n)
        return 0;
    if (r->wide) {
        const WCHAR *w = r->p;
        uint32_t u = w[r->i];
        if (r->n == SIZE_MAX && u == 0)
            return 0;
        r->i++;
        if (u >= 0xD800 && u < 0xDC00 && r->i < r->n && w[r->i] >= 0xDC00 && w[r->i] < 0xE000) {
            u = 0x10000 + ((u - 0xD800) << 10) + (w[r->i] - 0xDC00);
            r->i++;
        }
        *cp = u;
        return 1;
    }
    const unsigned char *b = r->p;
    uint32_t c = b[r->i];
    if (r->n == SIZE_MAX && c == 0)
        return 0;
    r->i++;
    int more = c >= 0xF0 && c < 0xF8 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
    if (c >= 0x80 && more) {
        uint32_t v = c & (0x3F >> more);
        size_t j = r->i;
        int k;
        for (k = 0; k < more; k++, j++) {
            if (j >= r->n || (b[j] & 0xC0) != 0x80)
                break;
            v = (v << 6) | (b[j] & 0x3F);
        }
        if (k == more) {
            r->i = j;
            c = v;
        }
    }
    *cp = c;
    return 1;
}

static void put_ascii(struct sink *s, const char *t)
{
    while (*t)
        put_unit(s, (unsigned char)*t++);
}

/* A string argument with width, precision (in characters) and the '-' flag. */
static void put_text(struct sink *s, struct src r, int width, int prec, int left)
{
    size_t count = 0;
    uint32_t cp;
    struct src c = r;
    while ((prec < 0 || (int)count < prec) && src_next(&c, &cp))
        count++;
    if (!left)
        for (int i = (int)count; i < width; i++)
            put_unit(s, ' ');
    for (size_t k = 0; k < count && src_next(&r, &cp); k++)
        put_cp(s, cp);
    if (left)
        for (int i = (int)count; i < width; i++)
            put_unit(s, ' ');
}

/* One standard conversion for snprintf: "%<flags>[-]<width>.<prec><len><conv>". */
static void build_spec(char *spec, size_t n, const char *flags, int left, int width, int prec, const char *len,
                       char conv)
{
    char w[16] = "", p[16] = "";
    if (width >= 0)
        snprintf(w, sizeof w, "%d", width);
    if (prec >= 0)
        snprintf(p, sizeof p, ".%d", prec);
    snprintf(spec, n, "%%%s%s%s%s%s%c", flags, left && !strchr(flags, '-') ? "-" : "", w, p, len, conv);
}

size_t wdk_vformat(void *buf, size_t cap, int wide_out, const void *fmt, int wide_fmt, va_list ap)
{
    struct sink s = { buf, cap, wide_out, 0 };
    struct src f = { fmt, wide_fmt, 0, SIZE_MAX };
    va_list args;
    va_copy(args, ap);
    uint32_t c;
    while (src_next(&f, &c)) {
        if (c != '%') {
            put_cp(&s, c);
            continue;
        }
        char flags[8];
        int nflags = 0, width = -1, prec = -1, left = 0;
        if (!src_next(&f, &c))
            break;
        while (c == '-' || c == '+' || c == ' ' || c == '#' || c == '0') {
            if (c == '-')
                left = 1;
            if (nflags < 6)
                flags[nflags++] = (char)c;
            if (!src_next(&f, &c))
                goto out;
        }
        flags[nflags] = 0;
        if (c == '*') {
            width = va_arg(args, int);
            if (width < 0) {
                left = 1;
                width = -width;
            }
            if (!src_next(&f, &c))
                goto out;
        } else {
            while (c >= '0' && c <= '9') {
                width = (width < 0 ? 0 : width) * 10 + (int)(c - '0');
                if (!src_next(&f, &c))
                    goto out;
            }
        }
        if (c == '.') {
            prec = 0;
            if (!src_next(&f, &c))
                goto out;
            if (c == '*') {
                prec = va_arg(args, int);
                if (!src_next(&f, &c))
                    goto out;
            } else {
                while (c >= '0' && c <= '9') {
                    prec = prec * 10 + (int)(c - '0');
                    if (!src_next(&f, &c))
                        goto out;
                }
            }
        }
        /* size: 0 int, 1 char, 2 short, 8 64-bit, 'w' wide, 'n' narrow, 'L' long double */
        int size = 0;
        for (;;) {
            if (c == 'h') {
                size = size == 2 ? 1 : 2;
            } else if (c == 'l') {
                size = size == 4 ? 8 : 4;   /* l: LONG (32-bit), ll: 64-bit */
            } else if (c == 'w') {
                size = 'w';
            } else if (c == 'L') {
                size = 'L';
            } else if (c == 'z' || c == 'j' || c == 't' || c == 'q') {
                size = 8;
            } else if (c == 'I') {
                struct src peek = f;
                uint32_t a = 0, b = 0;
                src_next(&peek, &a);
                src_next(&peek, &b);
                if (a == '6' && b == '4') {
                    size = 8;
                    f = peek;
                } else if (a == '3' && b == '2') {
                    size = 4;
                    f = peek;
                } else {
                    size = 8;
                }
            } else {
                break;
            }
            if (!src_next(&f, &c))
                goto out;
        }
        char spec[32], tmp[128];
        int wide_arg;
        switch (c) {
        case '%':
            put_unit(&s, '%');
            break;
        case 'd': case 'i': case 'u': case 'x': case 'X': case 'o': {
            int is_signed = c == 'd' || c == 'i';
            build_spec(spec, sizeof spec, flags, left, width, prec, "ll", (char)c);
            long long v;
            if (size == 8) {
                v = va_arg(args, long long);
            } else {
                int iv = va_arg(args, int);
                if (size == 1)
                    v = is_signed ? (long long)(signed char)iv : (long long)(unsigned char)iv;
                else if (size == 2)
                    v = is_signed ? (long long)(short)iv : (long long)(unsigned short)iv;
                else
                    v = is_signed ? (long long)iv : (long long)(unsigned int)iv;
            }
            if (is_signed)
                snprintf(tmp, sizeof tmp, spec, v);
            else
                snprintf(tmp, sizeof tmp, spec, (unsigned long long)v);
            put_ascii(&s, tmp);
            break;
        }
        case 'p': {
            void *p = va_arg(args, void *);
            snprintf(tmp, sizeof tmp, "%016llX", (unsigned long long)(uintptr_t)p);
            put_text(&s, (struct src){ tmp, 0, 0, SIZE_MAX }, width, -1, left);
            break;
        }
        case 'e': case 'E': case 'f': case 'F': case 'g': case 'G': case 'a': case 'A': {
            double d = size == 'L' ? (double)va_arg(args, long double) : va_arg(args, double);
            build_spec(spec, sizeof spec, flags, left, width, prec, "", (char)c);
            snprintf(tmp, sizeof tmp, spec, d);
            put_ascii(&s, tmp);
            break;
        }
        case 'c': case 'C': {
            wide_arg = size == 'w' || size == 4 || (size != 2 && ((c == 'c') == (wide_fmt != 0)));
            int v = va_arg(args, int);
            uint32_t cp = wide_arg ? (uint32_t)(WCHAR)v : (uint32_t)(unsigned char)v;
            if (!left)
                for (int i = 1; i < width; i++)
                    put_unit(&s, ' ');
            put_cp(&s, cp);
            if (left)
                for (int i = 1; i < width; i++)
                    put_unit(&s, ' ');
            break;
        }
        case 's': case 'S': {
            wide_arg = size == 'w' || size == 4 || (size != 2 && ((c == 's') == (wide_fmt != 0)));
            const void *p = va_arg(args, const void *);
            if (!p)
                put_text(&s, (struct src){ "(null)", 0, 0, SIZE_MAX }, width, prec, left);
            else
                put_text(&s, (struct src){ p, wide_arg, 0, SIZE_MAX }, width, prec, left);
            break;
        }
        case 'Z': {
            /* %Z: PANSI_STRING, %wZ: PUNICODE_STRING (lengths in bytes, no terminator needed) */
            const void *p = va_arg(args, const void *);
            if (!p) {
                put_text(&s, (struct src){ "(null)", 0, 0, SIZE_MAX }, width, prec, left);
            } else if (size == 'w') {
                const UNICODE_STRING *u = p;
                put_text(&s, (struct src){ u->Buffer, 1, 0, u->Buffer ? u->Length / 2 : 0 }, width, prec, left);
            } else {
                const ANSI_STRING *a = p;
                put_text(&s, (struct src){ a->Buffer, 0, 0, a->Buffer ? a->Length : 0 }, width, prec, left);
            }
            break;
        }
        case 'n':
            (void)va_arg(args, void *);   /* never written: %n is refused as in the Windows CRT */
            break;
        default:
            put_unit(&s, '%');
            put_cp(&s, c);
            break;
        }
    }
out:
    va_end(args);
    if (s.cap) {
        size_t end = s.len < s.cap ? s.len : s.cap - 1;
        if (wide_out)
            ((WCHAR *)buf)[end] = 0;
        else
            ((char *)buf)[end] = 0;
    }
    return s.len;
}
