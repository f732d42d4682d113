"""edo.apply_plan: a plan file read and checked (_plan_file), each table converted (_apply), its
optimizer levers (_levers), fp16/bf16 training with fp32 state (_lowp) and vocabulary trimming
(_vocab_trim). Needs torch only when a plan is applied."""
