"""Lists, dicts, sets and comprehensions for the codescope probe corpus."""
from collections import defaultdict, deque


def flatten(nested):
    return [x for sub in nested for x in sub]


def unique(items):
    seen = set()
    out = []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def chunk(items, size):
    return [items[i : i + size] for i in range(0, len(items), size)]


def group_by(items, key):
    groups = defaultdict(list)
    for item in items:
        groups[key(item)].append(item)
    return dict(groups)


def invert(mapping):
    return {v: k for k, v in mapping.items()}


def merge_dicts(a, b):
    merged = dict(a)
    for key, value in b.items():
        if key in merged and isinstance(merged[key], dict):
            merged[key] = merge_dicts(merged[key], value)
        else:
            merged[key] = value
    return merged


def top_k(counts, k):
    return sorted(counts.items(), key=lambda kv: kv[1], reverse=True)[:k]


def squares(n):
    return [i * i for i in range(n)]


def even_squares(values):
    return {v: v * v for v in values if v % 2 == 0}


def pairwise(items):
    return list(zip(items, items[1:]))


def rotate(items, k):
    if not items:
        return items
    k %= len(items)
    return items[-k:] + items[:-k]


def binary_search(items, target):
    lo, hi = 0, len(items) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if items[mid] == target:
            return mid
        if items[mid] < target:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1


def bubble_sort(items):
    items = list(items)
    n = len(items)
    for i in range(n):
        for j in range(n - i - 1):
            if items[j] > items[j + 1]:
                items[j], items[j + 1] = items[j + 1], items[j]
    return items


def merge_sorted(a, b):
    i = j = 0
    out = []
    while i < len(a) and j < len(b):
        if a[i] <= b[j]:
            out.append(a[i])
            i += 1
        else:
            out.append(b[j])
            j += 1
    out.extend(a[i:])
    out.extend(b[j:])
    return out


def merge_sort(items):
    if len(items) <= 1:
        return items
    mid = len(items) // 2
    return merge_sorted(merge_sort(items[:mid]), merge_sort(items[mid:]))


def quick_sort(items):
    if len(items) < 2:
        return items
    pivot = items[0]
    less = [x for x in items[1:] if x < pivot]
    more = [x for x in items[1:] if x >= pivot]
    return quick_sort(less) + [pivot] + quick_sort(more)


def bfs(graph, start):
    order = []
    seen = {start}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        order.append(node)
        for nxt in graph.get(node, []):
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return order


def dfs(graph, node, seen=None):
    if seen is None:
        seen = set()
    seen.add(node)
    for nxt in graph.get(node, []):
        if nxt not in seen:
            dfs(graph, nxt, seen)
    return seen


def frequencies(items):
    freq = {}
    for item in items:
        freq[item] = freq.get(item, 0) + 1
    return freq


def intersection(a, b):
    return sorted(set(a) & set(b))


def difference(a, b):
    other = set(b)
    return [x for x in a if x not in other]


def partition(items, predicate):
    yes, no = [], []
    for item in items:
        (yes if predicate(item) else no).append(item)
    return yes, no


def max_by(items, key):
    best = None
    best_key = None
    for item in items:
        k = key(item)
        if best_key is None or k > best_key:
            best, best_key = item, k
    return best


def sliding_max(values, window):
    out = []
    for i in range(len(values) - window + 1):
        out.append(max(values[i : i + window]))
    return out


def index_of_all(items, target):
    return [i for i, x in enumerate(items) if x == target]


def zip_to_dict(keys, values):
    return dict(zip(keys, values))


def deep_get(data, path, default=None):
    current = data
    for key in path.split("."):
        if not isinstance(current, dict) or key not in current:
            return default
        current = current[key]
    return current


def sort_records(records, field):
    return sorted(records, key=lambda r: (r.get(field) is None, r.get(field)))


def second_largest(values):
    first = second = None
    for v in values:
        if first is None or v > first:
            first, second = v, first
        elif v != first and (second is None or v > second):
            second = v
    return second


def cumulative_keys(d):
    total = 0
    result = {}
    for key in sorted(d):
        total += d[key]
        result[key] = total
    return result


def transpose_dict(rows):
    columns = defaultdict(list)
    for row in rows:
        for k, v in row.items():
            columns[k].append(v)
    return dict(columns)
