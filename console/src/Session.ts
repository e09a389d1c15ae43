/**
 * The caller's bearer token, in this tab's session storage only: never in a URL, a cookie or
 * local storage, gone when the tab closes or the caller signs out.
 */
const KEY = "agentplane.token"

export const token = (): string | null => sessionStorage.getItem(KEY)

export const signIn = (value: string): void => sessionStorage.setItem(KEY, value)

/** Forgets the token. */
export const signOut = (): void => sessionStorage.removeItem(KEY)
