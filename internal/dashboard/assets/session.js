// The session: the API key, kept in this tab's sessionStorage only (never
// in a URL, a cookie or storage that outlives the tab), and the role the
// key was found to have.

const KEY_STORAGE = "docket.apiKey";

export const session = {
  role: null, // "admin" or "member" once signed in
};

export function storedKey() {
  return sessionStorage.getItem(KEY_STORAGE);
}

export function keepKey(key) {
  sessionStorage.setItem(KEY_STORAGE, key);
}

export function forgetKey() {
  sessionStorage.removeItem(KEY_STORAGE);
  session.role = null;
}

export function isAdmin() {
  return session.role === "admin";
}
