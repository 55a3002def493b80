/**
 * Lua: the run_id of the Redis server running the script (INFO server). A server gets a new one each time it
 * starts, whatever data it loads, and a replica promoted in a failover has its own: state kept under it is never
 * read back from a server that restored an older snapshot of it. Asked inside the script that reads the state,
 * it holds on every topology (Sentinel, Cluster) and costs no round trip.
 */
export const SERVER_RUN_LUA = `string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')`;
