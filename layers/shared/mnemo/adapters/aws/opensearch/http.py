"""A small OpenSearch REST client over urllib3, signed with botocore's SigV4: the calls Mnemo makes.

The adapter's and ``infra/bootstrap_opensearch.py``'s calls, and nothing more.

Why not opensearch-py: importing it costs every Lambda cold start that reaches OpenSearch 90-120 ms on the
built layer (it imports requests and requests' charset detector, every API namespace, its DSL helpers and
metrics), and brings 25 MB into the layer, for a dozen documented REST calls. This client imports what botocore
has already loaded: urllib3 for the connection pool and botocore's SigV4 signer, the SDK's own.

It keeps opensearch-py's shapes where the adapter, the tests and the cost meter meet them:

- ``client.transport.perform_request(method, url, params=None, body=None, timeout=None, headers=None)``
  sends one request and answers its decoded JSON; ``params`` go to the query string, except
  ``request_timeout`` (seconds, this request's timeout). A dict body is sent as JSON, a list as NDJSON
  (``_bulk``, ``_msearch``: the methods below turn their lists into NDJSON text first, as opensearch-py does).
- ``msearch``, ``search``, ``count``, ``bulk`` and ``indices.create / delete / exists / get_mapping /
  put_mapping / get_settings / get_index_template / put_index_template`` take the same keyword arguments
  as opensearch-py's and call the same paths.
- Failures raise ``TransportError(status_code, error, info)`` (``NotFoundError`` for 404,
  ``AuthorizationException`` for 403, ``ConflictError`` for 409), with ``error`` the answer's error type;
  ``ConnectionTimeout`` when a request timed out (connecting or reading), never re-sent; ``ConnectionError``
  when no connection could be made or it broke, re-sent up to ``max_retries`` times (a pooled connection the
  server closed while the function was idle, the common case after scale to zero).

Signing mirrors opensearch-py's ``AWSV4Signer``: botocore's ``SigV4Auth`` over the full URL and the body's
bytes, with ``X-Amz-Content-SHA256`` set before signing (OpenSearch Serverless requires it), from frozen
credentials taken on every request so that refreshing credentials keep working.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlencode

JSON = "application/json"


# ---------------------------------------------------------------- errors ---
class OpenSearchException(Exception):
    """Any failure of a request this client sent."""


class ConnectionError(OpenSearchException):
    """No answer: the connection could not be made, or broke. ``status`` is "N/A" (or "TIMEOUT")."""

    def __init__(self, status: str = "N/A", message: str = "", cause: BaseException | None = None) -> None:
        super().__init__(status, message, cause)
        self.status, self.message, self.cause = status, message, cause


class ConnectionTimeout(ConnectionError):
    """The request timed out, connecting or waiting for its answer."""


class TransportError(OpenSearchException):
    """An answer with an HTTP status of 300 or more: ``status_code``, ``error`` (its type), ``info`` (the body)."""

    def __init__(self, status_code: int, error: str = "", info: Any = None) -> None:
        super().__init__(status_code, error, info)
        self.status_code, self.error, self.info = status_code, error, info


class NotFoundError(TransportError):
    """404: the index (or document) does not exist."""


class AuthorizationException(TransportError):
    """403: the credentials are not allowed."""


class ConflictError(TransportError):
    """409: a version conflict, or the resource exists."""


_BY_STATUS: dict[int, type[TransportError]] = {403: AuthorizationException, 404: NotFoundError, 409: ConflictError}


def transport_error(status: int, decoded: Any) -> TransportError:
    """The exception of an answer with status ``status`` and body ``decoded``: its error type as ``error``."""
    kind = str(status)
    if isinstance(decoded, Mapping):
        error = decoded.get("error")
        if isinstance(error, Mapping):
            kind = str(error.get("type") or kind)
        elif isinstance(error, str) and error:
            kind = error
    return _BY_STATUS.get(status, TransportError)(status, kind, decoded)


# ------------------------------------------------------------------ body ---
def serialized(body: Any) -> bytes | None:
    """A request body as bytes: a dict as JSON, a list as NDJSON (one JSON object a line), text as UTF-8."""
    if body is None:
        return None
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    if isinstance(body, list | tuple):
        return "".join(_json(line) + "\n" for line in body).encode()
    return _json(body).encode()


def _json(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def ndjson(lines: Any) -> Any:
    """A bulk or msearch body as NDJSON text (opensearch-py's ``_bulk_body``); text is sent as it is."""
    if isinstance(lines, list | tuple):
        return "".join(_json(line) + "\n" for line in lines)
    return lines


def path(*parts: str) -> str:
    """A URL path of ``parts``, each quoted whole (an index name never adds a segment)."""
    return "/" + "/".join(quote(part, safe=",*") for part in parts)


# --------------------------------------------------------------- signing ---
class Signer:
    """SigV4 request signing for ``service`` ("es" or "aoss") in ``region``, with ``credentials`` (botocore's)."""

    def __init__(self, credentials: Any, region: str, service: str) -> None:
        if not credentials:
            raise ValueError("Credentials cannot be empty")
        self.credentials, self.region, self.service = credentials, region, service

    def __call__(self, method: str, url: str, body: bytes | None) -> dict[str, str]:
        """The headers that sign this request: Authorization, X-Amz-Date, X-Amz-Content-SHA256 (and the
        session token's)."""
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        request = AWSRequest(method=method.upper(), url=url, data=body, headers={"Content-Type": JSON})
        # Frozen: a refreshing credentials object could change between its key and its secret.
        frozen = self.credentials.get_frozen_credentials()
        auth = SigV4Auth(frozen, self.service, self.region)
        request.headers["X-Amz-Content-SHA256"] = auth.payload(request)
        auth.add_auth(request)
        return dict(request.headers.items())


# ------------------------------------------------------------- transport ---
class Transport:
    """Sends requests to one OpenSearch endpoint through a urllib3 connection pool."""

    def __init__(self, base_url: str, signer: Signer | None, timeout: float, max_retries: int) -> None:
        import urllib3

        self.base_url = base_url.rstrip("/")
        self.signer = signer
        self.timeout = timeout
        self.max_retries = max_retries
        options: dict[str, Any] = {"maxsize": 10, "retries": False}
        if self.base_url.startswith("https://"):
            from botocore.httpsession import get_cert_path

            # The CA bundle the AWS SDK verifies its own endpoints with.
            options |= {"cert_reqs": "CERT_REQUIRED", "ca_certs": get_cert_path(True)}
        # One endpoint: its connection pool directly (a PoolManager would parse each URL to find it again).
        self._pool = urllib3.PoolManager(**options).connection_from_url(self.base_url)

    def perform_request(
        self,
        method: str,
        url: str,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        timeout: float | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """Send one request (the module docstring); its decoded JSON answer."""
        import urllib3

        query = dict(params or {})
        seconds = float(query.pop("request_timeout", None) or timeout or self.timeout)
        where = url + (f"?{urlencode(query)}" if query else "")
        target = self.base_url + where
        data = serialized(body)
        sent = {"Content-Type": JSON, **(headers or {})}
        last: BaseException | None = None
        for _ in range(1 + self.max_retries):
            signed = {**sent, **self.signer(method, target, data)} if self.signer is not None else sent
            try:
                response = self._pool.urlopen(
                    method,
                    where,
                    body=data,
                    headers=signed,
                    timeout=urllib3.Timeout(connect=seconds, read=seconds),
                    retries=False,
                )
            except (urllib3.exceptions.ConnectTimeoutError, urllib3.exceptions.ReadTimeoutError) as error:
                raise ConnectionTimeout("TIMEOUT", str(error), error) from None
            except urllib3.exceptions.HTTPError as error:  # refused, reset, broken pipe: nothing was answered
                last = error
                continue
            raw = response.data
            try:
                decoded = json.loads(raw) if raw else {}
            except ValueError:
                decoded = raw.decode(errors="replace")
            if response.status >= 300:
                raise transport_error(response.status, decoded)
            return decoded
        raise ConnectionError("N/A", str(last), last)


# ---------------------------------------------------------------- client ---
class Indices:
    """The index calls: ``client.indices``."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport

    def create(self, index: str, body: Any = None, params: Mapping[str, Any] | None = None) -> Any:
        return self.transport.perform_request("PUT", path(index), params=params, body=body)

    def delete(self, index: str, params: Mapping[str, Any] | None = None) -> Any:
        return self.transport.perform_request("DELETE", path(index), params=params)

    def get_mapping(self, index: str | None = None, params: Mapping[str, Any] | None = None) -> Any:
        """The mappings of ``index`` (None: of every index)."""
        where = path(index, "_mapping") if index is not None else "/_mapping"
        return self.transport.perform_request("GET", where, params=params)

    def put_mapping(self, index: str, body: Any, params: Mapping[str, Any] | None = None) -> Any:
        return self.transport.perform_request("PUT", path(index, "_mapping"), params=params, body=body)

    def put_index_template(self, name: str, body: Any, params: Mapping[str, Any] | None = None) -> Any:
        return self.transport.perform_request("PUT", path("_index_template", name), params=params, body=body)

    def get_index_template(self, name: str | None = None, params: Mapping[str, Any] | None = None) -> Any:
        """The index template ``name`` (None: every template)."""
        where = path("_index_template", name) if name is not None else "/_index_template"
        return self.transport.perform_request("GET", where, params=params)

    def get_settings(self, index: str | None = None, params: Mapping[str, Any] | None = None) -> Any:
        """The settings of ``index`` (None: of every index)."""
        where = path(index, "_settings") if index is not None else "/_settings"
        return self.transport.perform_request("GET", where, params=params)

    def exists(self, index: str, params: Mapping[str, Any] | None = None) -> bool:
        """Whether the index exists (HEAD: 200 or 404)."""
        try:
            self.transport.perform_request("HEAD", path(index), params=params)
        except NotFoundError:
            return False
        return True


class OpenSearchClient:
    """The calls the adapter makes, on one endpoint (the module docstring)."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self.indices = Indices(transport)

    def search(self, index: str, body: Any, params: Mapping[str, Any] | None = None) -> Any:
        return self.transport.perform_request("POST", path(index, "_search"), params=params, body=body)

    def msearch(self, body: Any, params: Mapping[str, Any] | None = None) -> Any:
        return self.transport.perform_request("POST", "/_msearch", params=params, body=ndjson(body))

    def count(self, index: str, params: Mapping[str, Any] | None = None) -> Any:
        return self.transport.perform_request("POST", path(index, "_count"), params=params)

    def bulk(self, body: Any, params: Mapping[str, Any] | None = None) -> Any:
        return self.transport.perform_request("POST", "/_bulk", params=params, body=ndjson(body))
