//! fio job files: parser and generator (in progress).
