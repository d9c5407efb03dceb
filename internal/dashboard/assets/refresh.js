// Refresh timers and stale answers. Each view refreshes itself on one
// timer; a navigation (or sign-out) ends the timer of the view before.

let nav = 0; // counts navigations: a view's timer belongs to the navigation that opened it
let timer = null;

// navigation is the number of the current navigation.
export function navigation() {
  return nav;
}

function stop() {
  if (timer) clearInterval(timer);
  timer = null;
}

// stopIf ends the refresh when navigation n is still the current one.
export function stopIf(n) {
  if (n === nav) stop();
}

// navigated ends the current view's refresh: a new view (or sign-out)
// takes over.
export function navigated() {
  nav++;
  stop();
}

// every installs the refresh timer of the view that navigation n opened,
// unless the user has moved on since: a view whose first load answered
// after a click elsewhere must not replace the timer of the view on
// screen (which would then never refresh again).
export function every(n, ms, fn) {
  if (n !== nav) return;
  stop();
  timer = setInterval(() => {
    if (!document.hidden) fn();
  }, ms);
}

// latestOnly numbers the calls of one loader. Loads overlap (a timer, a
// click, a form's reload), and an older answer that arrives last would
// replace the newer one on screen: a call renders (or flashes its error)
// only while it is the latest.
//
//	const loads = latestOnly();
//	const latest = loads();   // at the start of a load
//	if (!latest()) return;    // when its answer arrives
export function latestOnly() {
  let n = 0;
  return () => {
    const mine = ++n;
    return () => mine === n;
  };
}
