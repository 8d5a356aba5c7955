"""Bearer-token check for the checkout API (a sample workspace file)."""

import hmac


def token_matches(presented: str, expected: str) -> bool:
    """Compare in constant time, so the comparison does not leak how much matched."""
    return hmac.compare_digest(presented.encode(), expected.encode())
