"""The CDK app that deploys the functions, the workflow and the data of `functions/common/resources.py`."""
