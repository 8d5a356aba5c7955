"""The Mnemo console: a web page to see and correct what agents remember.

The page is static (HTML, one stylesheet, plain ES modules in ``static/``) and
talks to Mnemo only through the public tools API (``POST /v1/tools/{name}``),
as any other client does. ``mnemo serve`` serves it at ``/ui``
(``mnemo.console.routes``); deployed, the stack's console function serves the
same files beside the API (``mnemo.entry.console_lambda``, template parameter
``Console``). Both answer through ``mnemo.console.files``. docs/console.md
describes it.
"""
