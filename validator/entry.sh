#!/bin/sh
# TIRA evaluator entry: evaluate the run in INPUT_RUN against the truth in INPUT_DATASET
# and write OUTPUT_DIR/evaluation.prototext.
#
#   entry.sh TASK_ID [INPUT_RUN INPUT_DATASET OUTPUT_DIR]
#
# Without the three paths, $inputRun, $inputDataset and $outputDir (or TIRA_INPUT_DATASET,
# TIRA_OUTPUT_DIR) are used. The task id may also come from $SHAREDTASK_TASK.
# Exit codes: 0 evaluated, 2 the run or the truth could not be evaluated (one-line reason).
set -eu
TASK="${1:-${SHAREDTASK_TASK:-}}"
if [ -z "$TASK" ]; then
    echo "usage: entry.sh TASK_ID [INPUT_RUN INPUT_DATASET OUTPUT_DIR]" >&2
    exit 2
fi
if [ "$#" -ge 4 ]; then
    exec sharedtask evaluate --tira --task "$TASK" --input-run "$2" --input-dataset "$3" --output-dir "$4"
fi
exec sharedtask evaluate --tira --task "$TASK"
