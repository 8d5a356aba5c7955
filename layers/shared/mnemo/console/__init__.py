"""The Mnemo console: a web page to see and correct what agents remember.

The page is static (HTML, one stylesheet, plain ES modules in ``static/``) and
talks to Mnemo only through the public tools API (``POST /v1/tools/{name}``),
as any other client does. ``mnemo serve`` serves it at ``/ui``
(``mnemo.console.routes``); deployed, the same files can be served beside the
API. docs/console.md describes it.
"""
