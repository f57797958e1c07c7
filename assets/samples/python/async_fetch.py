import asyncio
import json


async def fetch_json(session, url, *, retries=3, timeout=5.0):
    last_error = None
    for attempt in range(1, retries + 1):
        try:
            async with session.get(url, timeout=timeout) as response:
                if response.status != 200:
                    raise RuntimeError(f"HTTP {response.status} for {url}")
                return json.loads(await response.text())
        except (RuntimeError, asyncio.TimeoutError) as err:
            last_error = err
            await asyncio.sleep(0.1 * 2 ** attempt)
    raise RuntimeError(f"giving up on {url}") from last_error


def summarize(records):
    totals = {}
    for record in records:
        match record:
            case {"kind": "sale", "amount": amount}:
                totals["sales"] = totals.get("sales", 0) + amount
            case {"kind": "refund", "amount": amount} if amount > 0:
                totals["refunds"] = totals.get("refunds", 0) + amount
            case _:
                continue
    if (n := len(totals)) > 0:
        print(f"{n} categories")
    return {k: round(v, 2) for k, v in totals.items()}
