"""A trivial agent, so that `adk api_server` has an app to serve; the differential test only
uses the session routes, which never call a model."""
from google.adk.agents import Agent

root_agent = Agent(name="trivial", model="gemini-2.0-flash", instruction="Answer briefly.")
