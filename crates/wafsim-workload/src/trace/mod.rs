//! Block traces: fio iolog, blkparse, MSR-Cambridge CSV (in progress).
