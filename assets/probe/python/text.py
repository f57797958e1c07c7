"""String handling for the codescope probe corpus."""
import re


def word_count(text):
    counts = {}
    for word in text.lower().split():
        counts[word] = counts.get(word, 0) + 1
    return counts


def reverse_words(sentence):
    return " ".join(reversed(sentence.split()))


def is_palindrome(s):
    cleaned = [c.lower() for c in s if c.isalnum()]
    return cleaned == cleaned[::-1]


def capitalize_all(words):
    return [w.capitalize() for w in words]


def vowel_count(text):
    return sum(1 for ch in text if ch in "aeiouAEIOU")


def snake_to_camel(name):
    parts = name.split("_")
    return parts[0] + "".join(p.title() for p in parts[1:])


def camel_to_snake(name):
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i > 0:
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


def truncate(text, width, suffix="..."):
    if len(text) <= width:
        return text
    return text[: width - len(suffix)] + suffix


def pad_left(text, width, fill=" "):
    while len(text) < width:
        text = fill + text
    return text


def caesar(text, shift):
    result = ""
    for ch in text:
        if ch.isalpha():
            base = ord("a") if ch.islower() else ord("A")
            result += chr((ord(ch) - base + shift) % 26 + base)
        else:
            result += ch
    return result


def count_lines(text):
    return len([line for line in text.splitlines() if line.strip()])


def extract_emails(text):
    return re.findall(r"[\w.]+@[\w.]+", text)


def slugify(title):
    slug = title.strip().lower()
    slug = re.sub(r"[^a-z0-9]+", "-", slug)
    return slug.strip("-")


def parse_key_values(line):
    pairs = {}
    for item in line.split(";"):
        if "=" not in item:
            continue
        key, value = item.split("=", 1)
        pairs[key.strip()] = value.strip()
    return pairs


def format_table(rows):
    widths = [max(len(str(cell)) for cell in col) for col in zip(*rows)]
    lines = []
    for row in rows:
        cells = [str(c).ljust(w) for c, w in zip(row, widths)]
        lines.append(" | ".join(cells))
    return "\n".join(lines)


def longest_word(text):
    best = ""
    for word in text.split():
        if len(word) > len(best):
            best = word
    return best


def char_histogram(text):
    hist = {}
    for ch in text:
        if ch != " ":
            hist[ch] = hist.get(ch, 0) + 1
    return sorted(hist.items(), key=lambda kv: -kv[1])


def is_anagram(a, b):
    return sorted(a.replace(" ", "")) == sorted(b.replace(" ", ""))


def compress(text):
    if not text:
        return ""
    out = []
    prev = text[0]
    run = 1
    for ch in text[1:]:
        if ch == prev:
            run += 1
        else:
            out.append(f"{prev}{run}")
            prev, run = ch, 1
    out.append(f"{prev}{run}")
    return "".join(out)


def wrap(text, width):
    lines, current = [], ""
    for word in text.split():
        if current and len(current) + 1 + len(word) > width:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    if current:
        lines.append(current)
    return lines


def strip_comments(source):
    kept = []
    for line in source.splitlines():
        idx = line.find("#")
        if idx >= 0:
            line = line[:idx]
        if line.strip():
            kept.append(line.rstrip())
    return "\n".join(kept)


def initials(full_name):
    return "".join(part[0].upper() for part in full_name.split() if part)


def mask_secret(secret, visible=4):
    hidden = len(secret) - visible
    if hidden <= 0:
        return secret
    return "*" * hidden + secret[-visible:]


def template(text, values):
    for key, value in values.items():
        text = text.replace("{" + key + "}", str(value))
    return text


def common_prefix(words):
    if not words:
        return ""
    prefix = words[0]
    for w in words[1:]:
        while not w.startswith(prefix):
            prefix = prefix[:-1]
    return prefix


def to_title(text):
    small = {"a", "an", "the", "of", "in"}
    words = text.split()
    return " ".join(
        w if i > 0 and w in small else w.capitalize() for i, w in enumerate(words)
    )


def parse_int(text, default=None):
    try:
        return int(text.strip())
    except (ValueError, AttributeError):
        return default


def hex_string(data):
    return "".join("{:02x}".format(b) for b in data)
