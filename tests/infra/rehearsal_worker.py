"""One warm Lambda execution environment of the deployment rehearsal: a built function's handler.

Run as ``python3.12 -I -S rehearsal_worker.py FUNCTION_DIR LAYER_DIR RUNTIME_DIR HANDLER``:
isolated (no PYTHON* variables, no user or site packages), so ``sys.path`` is the
standard library plus what this script puts first, in Lambda's order: the function's
code (/var/task), the layer's ``python/`` (/opt/python), then the runtime's own boto3
and botocore (the python3.12 runtime ships them; RUNTIME_DIR stands in for them).

Like the Lambda runtime interface, it imports the handler once (reporting the init
error if that fails), then reads one invocation per line on stdin (JSON: event,
request id, deadline) and writes one answer per line: the handler's result, or the
error Lambda would report (errorType, errorMessage, stackTrace). Anything the function
prints goes to stderr, as its log. Only the standard library is used here.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
import traceback

STDLIB = list(sys.path)


class LambdaContext:
    """The attributes and method of the Lambda context object (python3.12 runtime)."""

    def __init__(self, request: dict) -> None:
        self.function_name = os.environ["AWS_LAMBDA_FUNCTION_NAME"]
        self.function_version = os.environ.get("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        self.invoked_function_arn = request["invokedFunctionArn"]
        self.memory_limit_in_mb = os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "512")
        self.aws_request_id = request["requestId"]
        self.log_group_name = os.environ.get("AWS_LAMBDA_LOG_GROUP_NAME", "")
        self.log_stream_name = os.environ.get("AWS_LAMBDA_LOG_STREAM_NAME", "")
        self.identity = None
        self.client_context = None
        self._deadline_ms = request["deadlineMs"]

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int(self._deadline_ms - time.time() * 1000))


def _error(error: BaseException) -> dict:
    return {
        "errorType": type(error).__name__,
        "errorMessage": str(error),
        "stackTrace": traceback.format_exception(error),
    }


def main() -> int:
    function_dir, layer_dir, runtime_dir, handler_name = sys.argv[1:5]
    sys.path[:] = [function_dir, layer_dir, runtime_dir, *STDLIB]
    # Answers go out on a copy of stdout; the function's own prints and logs go to stderr.
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    module_name, _, attribute = handler_name.rpartition(".")
    try:
        handler = getattr(importlib.import_module(module_name), attribute)
    except BaseException as error:
        answers.write(json.dumps({"ready": False, "error": _error(error)}) + "\n")
        return 1
    answers.write(json.dumps({"ready": True, "sysPath": sys.path, "version": list(sys.version_info[:3])}) + "\n")
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("command") == "modules":
            files = sorted({getattr(module, "__file__", None) or "" for module in list(sys.modules.values())} - {""})
            answers.write(json.dumps({"files": files}) + "\n")
            continue
        try:
            result = handler(request["event"], LambdaContext(request))
            answer = {"ok": True, "result": result}
        except Exception as error:
            answer = {"ok": False, "error": _error(error)}
        answers.write(json.dumps(answer, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
