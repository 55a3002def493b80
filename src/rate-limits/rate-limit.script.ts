/**
 * The one Redis script behind every limit: it reads all of a request's counters, decides, and moves them all as
 * its `move` argument says (by default only when every rule allows), atomically and in one round trip.
 *
 * KEYS[i]: the counter of rule i.  ARGV: now (ms), cost, move (1: only when every rule allows; 0: never, to decide
 * for `cost` without moving anything; 2: always, whatever the decision), then three values per rule:
 *   'w', limit, windowMs         sliding window counter, anchored at the counter's first hit: the estimate
 *                                is previous × (unelapsed share of the window) + current, so the edge of a
 *                                window never lets twice the limit through (a fixed window's known failure);
 *   'b', capacity, refillPerMs   token bucket.
 * Returns { allowed (1|0), then per rule: remaining, resetAtMs, retryAfterMs }. resetAtMs is when the full
 * limit is available again; retryAfterMs (0 when the rule allows) is when one more request of this cost
 * would be allowed. A cost of 0 reads without moving anything (status reports).
 */
export const RATE_LIMIT_LUA = `
local now = tonumber(ARGV[1])
local cost = tonumber(ARGV[2])
local move = ARGV[3]
local n = #KEYS
local allowed = 1
local state = {}

for i = 1, n do
  local base = 3 + (i - 1) * 3
  local kind = ARGV[base + 1]
  local a = tonumber(ARGV[base + 2])
  local b = tonumber(ARGV[base + 3])
  local s = { kind = kind, a = a, b = b }
  if kind == 'w' then
    local h = redis.call('HMGET', KEYS[i], 'a', 'i', 'c', 'p')
    local anchor = tonumber(h[1]) or now
    local idx = math.max(0, math.floor((now - anchor) / b))
    local stored = tonumber(h[2]) or idx
    local curr = tonumber(h[3]) or 0
    local prev = tonumber(h[4]) or 0
    if stored > idx then
      idx = stored
    elseif stored < idx then
      if stored == idx - 1 then prev = curr else prev = 0 end
      curr = 0
    end
    local elapsed = math.min(b, math.max(0, now - anchor - idx * b))
    local used = prev * (b - elapsed) / b + curr
    s.anchor = anchor; s.idx = idx; s.curr = curr; s.prev = prev; s.elapsed = elapsed; s.used = used
    s.ok = used + cost <= a
  else
    local h = redis.call('HMGET', KEYS[i], 't', 'ts')
    local tokens = tonumber(h[1]) or a
    local ts = tonumber(h[2]) or now
    if now > ts then tokens = math.min(a, tokens + (now - ts) * b) end
    s.tokens = tokens
    s.ok = tokens >= cost
  end
  if not s.ok then allowed = 0 end
  state[i] = s
end

local out = { allowed }
for i = 1, n do
  local s = state[i]
  local take = 0
  if move == '2' or (allowed == 1 and move == '1') then take = cost end
  local remaining, resetAt, retry
  if s.kind == 'w' then
    local limit, w = s.a, s.b
    local curr = s.curr + take
    local used = s.used + take
    remaining = math.max(0, math.floor(limit - used + 1e-9))
    if curr > 0 then resetAt = s.anchor + (s.idx + 2) * w
    elseif s.prev > 0 then resetAt = s.anchor + (s.idx + 1) * w
    else resetAt = now end
    retry = 0
    if not s.ok then
      local need = limit - cost
      if need < 0 then
        retry = resetAt - now
      elseif s.curr <= need and s.prev > 0 then
        retry = w * (1 - (need - s.curr) / s.prev) - s.elapsed
      else
        retry = (w - s.elapsed) + w * (1 - need / s.curr)
      end
    end
    if take > 0 then
      redis.call('HSET', KEYS[i], 'a', s.anchor, 'i', s.idx, 'c', curr, 'p', s.prev)
      redis.call('PEXPIRE', KEYS[i], 2 * w)
    end
  else
    local capacity, rate = s.a, s.b
    local tokens = s.tokens - take
    remaining = math.max(0, math.floor(tokens + 1e-9))
    resetAt = now + math.ceil((capacity - tokens) / rate)
    retry = 0
    if not s.ok then retry = (cost - s.tokens) / rate end
    if take > 0 then
      redis.call('HSET', KEYS[i], 't', tostring(tokens), 'ts', now)
      redis.call('PEXPIRE', KEYS[i], math.ceil(capacity / rate) + 1000)
    end
  end
  out[#out + 1] = remaining
  out[#out + 1] = math.ceil(resetAt)
  out[#out + 1] = math.max(0, math.ceil(retry))
end
return out
`;
