"""Infrastructure: template.yaml against the catalog, the settings and the deployment rules (read as YAML;
the lifecycle rules applied on the serial moto server of tests/support/aws_fixtures.py), the layer's
imports, and the deployment rehearsal. test_rehearsal.py runs `sam build` (the SAM CLI of .venv/sam) into
the checkout's .aws-sam/rehearsal/, then a moto process, osmem-server and one python3.12 process per
function; that folder is fixed, so the rehearsal runs in one process at a time: it is one file, and
pytest-xdist runs a file on one worker. The scripts beside the tests (sam_transform.py, rehearsal_moto.py,
rehearsal_worker.py) are run by them or by the Makefile. No fixtures of
their own."""
