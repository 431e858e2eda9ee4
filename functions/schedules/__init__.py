"""Scheduled research: EventBridge Scheduler schedules that start research jobs (served by the orchestrate app)."""
