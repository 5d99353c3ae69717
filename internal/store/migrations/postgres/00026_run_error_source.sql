-- +goose Up
-- Where a failed run's error came from (docs/spec.md §5): 'tool' (the tool's own message,
-- a ToolUserError), 'crash' (an uncaught exception), 'runner' (a limit, a timeout, the
-- sandbox, a lost worker), 'policy' (the result broke the contract) or 'input' (the
-- user's input was refused); NULL for a run that did not fail. The web page chooses its
-- words from it, no longer from the summary's text.
ALTER TABLE runs ADD COLUMN error_source TEXT CHECK (error_source IN ('tool', 'crash', 'runner', 'policy', 'input'));

-- Runs recorded before it get their source once, here, from the summaries skrip itself
-- wrote (every one it has written, old words included): the last rule the web read them
-- by. Any other failed run's summary was the tool's message to its user, and the page
-- showed it as one; it still does.
UPDATE runs SET error_source = CASE
    WHEN status = 'timed_out' THEN 'runner'
    WHEN substr(error_summary, 1, length('Execution failed (runner contract violation)')) = 'Execution failed (runner contract violation)'
      OR substr(error_summary, 1, length('runner contract violation')) = 'runner contract violation'
      OR substr(error_summary, 1, length('The tool ended without a result')) = 'The tool ended without a result'
      THEN 'policy'
    WHEN substr(error_summary, 1, length('Tool execution ')) = 'Tool execution '
      OR substr(error_summary, 1, length('The script defines no function')) = 'The script defines no function'
      OR substr(error_summary, 1, length('run_tool returned ')) = 'run_tool returned '
      OR substr(error_summary, 1, length('run_tool''s outputs, next_actions or state are not JSON-serialisable')) = 'run_tool''s outputs, next_actions or state are not JSON-serialisable'
      THEN 'crash'
    WHEN substr(error_summary, 1, length('the sandbox failed')) = 'the sandbox failed'
      OR substr(error_summary, 1, length('the run''s artifacts could not be stored')) = 'the run''s artifacts could not be stored'
      OR substr(error_summary, 1, length('could not read the run''s input files')) = 'could not read the run''s input files'
      OR substr(error_summary, 1, length('the tool succeeded but its session')) = 'the tool succeeded but its session'
      OR substr(error_summary, 1, length('memory limit exceeded')) = 'memory limit exceeded'
      OR substr(error_summary, 1, length('interrupted by server restart')) = 'interrupted by server restart'
      OR substr(error_summary, 1, length('worker lost')) = 'worker lost'
      OR substr(error_summary, 1, length('not queued: ')) = 'not queued: '
      OR substr(error_summary, 1, length('the worker could not ')) = 'the worker could not '
      OR substr(error_summary, 1, length('the worker''s report of the run ')) = 'the worker''s report of the run '
      THEN 'runner'
    ELSE 'tool'
  END
WHERE status IN ('failed', 'timed_out');

-- +goose Down
ALTER TABLE runs DROP COLUMN error_source;
