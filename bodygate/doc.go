// Package bodygate owns the replica-wide budget of request bodies held in
// memory at once: the API's JSON bodies and the web UI's forms take room
// in one Gate, sized by what they declare, before any of them is read; a
// PerClient bounds the part of it one client may hold.
package bodygate
