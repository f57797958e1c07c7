"""Arithmetic and numeric helpers for the codescope probe corpus."""
import math


def add(a, b=1):
    x = a + b
    return x


def clamp(value, low, high):
    if value < low:
        return low
    if value > high:
        return high
    return value


def mean(values):
    if not values:
        return 0.0
    return sum(values) / len(values)


def variance(values):
    m = mean(values)
    total = 0.0
    for v in values:
        total += (v - m) ** 2
    return total / max(len(values) - 1, 1)


def gcd(a, b):
    while b:
        a, b = b, a % b
    return abs(a)


def lcm(a, b):
    if a == 0 or b == 0:
        return 0
    return abs(a * b) // gcd(a, b)


def is_prime(n):
    if n < 2:
        return False
    i = 2
    while i * i <= n:
        if n % i == 0:
            return False
        i += 1
    return True


def primes_below(limit):
    sieve = [True] * limit
    result = []
    for n in range(2, limit):
        if sieve[n]:
            result.append(n)
            for k in range(n * n, limit, n):
                sieve[k] = False
    return result


def factorial(n):
    result = 1
    for k in range(2, n + 1):
        result *= k
    return result


def fibonacci(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


def power(base, exp):
    result = 1
    while exp > 0:
        if exp & 1:
            result *= base
        base *= base
        exp >>= 1
    return result


def digits_sum(n):
    total = 0
    n = abs(n)
    while n > 0:
        total += n % 10
        n //= 10
    return total


def hypotenuse(a, b):
    return math.sqrt(a * a + b * b)


def distance(p, q):
    dx = p[0] - q[0]
    dy = p[1] - q[1]
    return math.hypot(dx, dy)


def celsius_to_fahrenheit(c):
    return c * 9 / 5 + 32


def compound_interest(principal, rate, years):
    amount = principal
    for year in range(years):
        amount = amount * (1 + rate)
    return round(amount - principal, 2)


def solve_quadratic(a, b, c):
    disc = b * b - 4 * a * c
    if disc < 0:
        return None
    root = math.sqrt(disc)
    return (-b + root) / (2 * a), (-b - root) / (2 * a)


def dot(u, v):
    return sum(x * y for x, y in zip(u, v))


def norm(v):
    return math.sqrt(dot(v, v))


def matmul(a, b):
    rows = len(a)
    cols = len(b[0])
    out = [[0] * cols for _ in range(rows)]
    for i in range(rows):
        for j in range(cols):
            for k in range(len(b)):
                out[i][j] += a[i][k] * b[k][j]
    return out


def transpose(matrix):
    return [list(row) for row in zip(*matrix)]


def running_total(values):
    total = 0
    out = []
    for v in values:
        total = total + v
        out.append(total)
    return out


def safe_divide(a, b, default=0.0):
    try:
        return a / b
    except ZeroDivisionError:
        return default


def percentile(values, p):
    ordered = sorted(values)
    if not ordered:
        raise ValueError("empty input")
    k = (len(ordered) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def binary_digits(n):
    if n == 0:
        return "0"
    bits = []
    while n:
        bits.append(str(n & 1))
        n >>= 1
    return "".join(reversed(bits))


def collatz_steps(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def sign(x):
    return (x > 0) - (x < 0)


def lerp(a, b, t):
    return a + (b - a) * t
