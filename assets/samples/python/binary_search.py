def binary_search(items, target, key=None):
    """Return the index of target in the sorted list items, or -1."""
    lo, hi = 0, len(items) - 1
    probe = key if key is not None else (lambda v: v)
    while lo <= hi:
        mid = (lo + hi) // 2
        value = probe(items[mid])
        if value == target:
            return mid
        elif value < target:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1


def insertion_point(items, target):
    # Leftmost position where target could be inserted.
    lo, hi = 0, len(items)
    while lo < hi:
        mid = (lo + hi) // 2
        if items[mid] < target:
            lo = mid + 1
        else:
            hi = mid
    return lo


if __name__ == "__main__":
    data = sorted([7, 3, 9, 1, 5])
    for needle in (5, 6):
        print(f"{needle}: {binary_search(data, needle)} / {insertion_point(data, needle)}")
