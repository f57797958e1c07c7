import re
from collections import Counter


def word_counts(path, min_length=3, stop_words=None):
    """Count the words of a text file, ignoring short and stop words."""
    stop_words = set(stop_words or ())
    counts = Counter()
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            for word in re.findall(r"[a-z']+", line.lower()):
                if len(word) >= min_length and word not in stop_words:
                    counts[word] += 1
    total = sum(counts.values())
    return [(word, n, n / total) for word, n in counts.most_common(10)]
