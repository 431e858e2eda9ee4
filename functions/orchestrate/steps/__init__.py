"""The step Lambdas of the research state machine (statemachine/research.asl.json), one module per Task
state; each module's `handler` is registered in `functions.common.resources.STEP_FUNCTIONS`."""
