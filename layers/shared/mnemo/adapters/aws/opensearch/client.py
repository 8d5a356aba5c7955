"""The OpenSearch client: SigV4-signed for a managed domain (``es``) or a Serverless collection (``aoss``).

The client is ``mnemo.adapters.aws.opensearch.http``'s: the REST calls the adapter makes, over urllib3 (which
botocore already loads in Lambda), signed by botocore's SigV4 with the process's one botocore session. The
signer asks the session's credentials object for frozen credentials on every request, so credentials that
refresh (ECS, SSO, assumed roles) keep working.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal
from urllib.parse import urlparse

from mnemo.errors import ProviderError

if TYPE_CHECKING:
    from mnemo.adapters.aws.opensearch.http import OpenSearchClient

Service = Literal["es", "aoss"]

#: Seconds one request may take by default (``Settings.opensearch_timeout`` in the stack): a Serverless
#: collection scaled to zero (0 OCU after 10 idle minutes) answers its first request after 10-30 s, and a
#: search must still answer within API Gateway's 29 s. memory_add's own index write takes a shorter one
#: (``Settings.opensearch_write_timeout``, per request) and queues the memory for the indexer on timeout.
TIMEOUT_SECONDS = 25.0
#: Retries of a request whose connection failed (a pooled connection the server closed while the function
#: was idle, the common case after scale to zero): fast failures. A request that timed out or got an HTTP
#: status back is never re-sent (``mnemo.adapters.aws.opensearch.http.Transport``): each retry would
#: wait the whole timeout again, and on Serverless a retried bulk could index its documents twice (they
#: carry no chosen _id).
MAX_RETRIES = 2
_LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1"}


def is_local_endpoint(endpoint: str) -> bool:
    """A plain ``http://`` URL on the loopback interface: a test server, reached without SigV4."""
    parsed = urlparse(endpoint)
    return parsed.scheme == "http" and (parsed.hostname or "") in _LOCAL_HOSTS


def make_client(
    endpoint: str,
    region: str | None,
    service: Service,
    endpoint_is_local: bool = False,
    timeout: float = TIMEOUT_SECONDS,
) -> OpenSearchClient:
    """An OpenSearch client for ``endpoint``.

    ``endpoint`` is the https URL (or bare host name) of a domain or Serverless collection;
    requests are signed with SigV4 for ``service`` ("es" for a domain, "aoss" for
    Serverless) in ``region`` (default: the AWS SDK's region). With ``endpoint_is_local`` the URL
    is used as given and nothing is signed (tests against a local server). ``timeout``: seconds
    a request may wait (``TIMEOUT_SECONDS``); a request may ask for another (``request_timeout``).
    """
    from mnemo.adapters.aws.opensearch.http import OpenSearchClient, Signer, Transport

    if service not in ("es", "aoss"):
        raise ValueError(f"OpenSearch SigV4 service must be 'es' or 'aoss', not {service!r}")
    if endpoint_is_local:
        return OpenSearchClient(Transport(endpoint, None, timeout, MAX_RETRIES))

    parsed = urlparse(endpoint if "://" in endpoint else f"https://{endpoint}")
    if parsed.scheme != "https" or not parsed.hostname:
        raise ValueError(f"a signed OpenSearch endpoint must be an https URL, not {endpoint!r}")

    # The process's botocore session, the AWS clients' own (mnemo.adapters.aws.clients): one session and one
    # credential resolution per cold start, and no boto3.
    from mnemo.adapters.aws.clients import botocore_session

    session = botocore_session()
    credentials = session.get_credentials()
    if credentials is None:
        raise ProviderError("No AWS credentials are available to sign OpenSearch requests", {"service": service})
    signing_region = region or session.get_config_variable("region")
    if not signing_region:
        raise ValueError("an AWS region is needed to sign OpenSearch requests (MNEMO_AWS_REGION or AWS_REGION)")
    base_url = f"https://{parsed.hostname}:{parsed.port or 443}"
    return OpenSearchClient(Transport(base_url, Signer(credentials, signing_region, service), timeout, MAX_RETRIES))
