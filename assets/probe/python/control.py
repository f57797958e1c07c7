"""Control flow, exceptions, generators and lambdas for the codescope probe corpus."""
import json
import os


def read_config(path, default=None):
    try:
        with open(path) as handle:
            return json.load(handle)
    except FileNotFoundError:
        return default
    except json.JSONDecodeError as err:
        raise ValueError(f"bad config {path}: {err}") from err


def retry(action, attempts=3):
    last = None
    for attempt in range(attempts):
        try:
            return action()
        except OSError as exc:
            last = exc
    raise RuntimeError("gave up") from last


def countdown(n):
    while n > 0:
        yield n
        n -= 1


def evens(limit):
    for i in range(limit):
        if i % 2:
            continue
        yield i


def first_negative(values):
    for index, value in enumerate(values):
        if value < 0:
            break
    else:
        return None
    return index


def classify(n):
    if n < 0:
        return "negative"
    elif n == 0:
        return "zero"
    elif n < 10:
        return "small"
    else:
        return "large"


def fizzbuzz(n):
    out = []
    for i in range(1, n + 1):
        if i % 15 == 0:
            out.append("FizzBuzz")
        elif i % 3 == 0:
            out.append("Fizz")
        elif i % 5 == 0:
            out.append("Buzz")
        else:
            out.append(str(i))
    return out


def compose(f, g):
    return lambda x: f(g(x))


def apply_all(funcs, value):
    for func in funcs:
        value = func(value)
    return value


def make_counter():
    count = 0

    def increment():
        nonlocal count
        count += 1
        return count

    return increment


def memoize(func):
    cache = {}

    def wrapper(*args):
        if args not in cache:
            cache[args] = func(*args)
        return cache[args]

    return wrapper


def sort_by_length(words):
    return sorted(words, key=lambda w: (len(w), w))


def filter_positive(values):
    return list(filter(lambda v: v > 0, values))


def double_all(values):
    return list(map(lambda v: v * 2, values))


def validate_age(age):
    if not isinstance(age, int):
        raise TypeError("age must be an int")
    if age < 0 or age > 150:
        raise ValueError("age out of range")
    return age


def list_python_files(root):
    found = []
    for directory, _, files in os.walk(root):
        for name in files:
            if name.endswith(".py"):
                found.append(os.path.join(directory, name))
    return sorted(found)


def parse_numbers(tokens):
    numbers, errors = [], []
    for token in tokens:
        try:
            numbers.append(float(token))
        except ValueError:
            errors.append(token)
        finally:
            pass
    return numbers, errors


def take(iterable, n):
    result = []
    for item in iterable:
        if len(result) >= n:
            break
        result.append(item)
    return result


def window(iterable, size):
    buf = []
    for item in iterable:
        buf.append(item)
        if len(buf) > size:
            buf.pop(0)
        if len(buf) == size:
            yield tuple(buf)


def state_machine(events):
    state = "idle"
    for event in events:
        if state == "idle" and event == "start":
            state = "running"
        elif state == "running" and event == "pause":
            state = "paused"
        elif state == "paused" and event == "resume":
            state = "running"
        elif event == "stop":
            state = "idle"
    return state


def match_command(command):
    match command.split():
        case ["go", direction]:
            return f"moving {direction}"
        case ["quit"]:
            return "bye"
        case _:
            return "unknown"


def assert_sorted(values):
    for a, b in zip(values, values[1:]):
        assert a <= b, f"{a} > {b}"
    return True


async def fetch_all(client, urls):
    results = []
    for url in urls:
        response = await client.get(url)
        results.append(response.status)
    return results


def walrus_lines(lines):
    kept = []
    for line in lines:
        if (n := len(line.strip())) > 3:
            kept.append((n, line))
    return kept


def nested_loops(n):
    pairs = []
    for i in range(n):
        for j in range(i):
            if (i + j) % 3 == 0:
                pairs.append((i, j))
    return pairs


def global_counter():
    global CALLS
    CALLS = globals().get("CALLS", 0) + 1
    return CALLS
