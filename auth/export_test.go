package auth

// ThrottleMax is how many addresses a Throttle tracks at most.
const ThrottleMax = throttleMax
