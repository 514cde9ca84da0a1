package videotask

// MaxFailureMessage bounds a failed task's error.message, in bytes, as it is stored and
// answered (the query, the list's failure_reason, callbacks, the /v1/videos front): a longer
// message of the provider's is cut on a UTF-8 character boundary and ends with "…". A provider
// may write megabytes there; the task record keeps only this much.
const MaxFailureMessage = 4096

// MaxFailureCode bounds a failed task's error.code the same way.
const MaxFailureCode = 256
